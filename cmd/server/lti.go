package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"capacitylab/envflag"
	"capacitylab/lti"
	"capacitylab/store"
	"capacitylab/web"
)

// ltiUsage is the usage of "server lti".
const ltiUsage = `usage:
  server lti add --issuer URL --client-id ID --deployment ID [--deployment ID ...] --auth-url URL --token-url URL --jwks-url URL
                 [--name NAME] [--frame-origin ORIGIN ...] [--token-audience AUD] [--data DIR | --database-url URL]
  server lti list [--data DIR | --database-url URL] [--lti-platforms FILE]
  server lti remove --issuer URL --client-id ID [--data DIR | --database-url URL]
  server lti rotate-key [--now] [--data DIR | --database-url URL]`

// newLTITool makes the server's LTI tool: the platforms of the file (if
// any) beside the stored ones, scores from the course and the store.
func newLTITool(ctx context.Context, cfg config, st *store.Store, course web.CourseFunc, log *slog.Logger) (*lti.Tool, error) {
	var file []lti.Platform
	if cfg.ltiPlatforms != "" {
		var err error
		if file, err = lti.ReadPlatformsFile(cfg.ltiPlatforms); err != nil {
			return nil, fmt.Errorf("--lti-platforms: %w", err)
		}
	}
	tool, err := lti.New(lti.Config{Store: st, Platforms: file, Score: web.LessonScores(course, st), Logger: log})
	if err != nil {
		return nil, err
	}
	plats, err := tool.Platforms(ctx)
	if err != nil {
		tool.Close()
		return nil, fmt.Errorf("reading LTI platforms: %w", err)
	}
	if len(plats) > 0 {
		log.Info("lti platforms registered", "platforms", len(plats), "from_file", len(file), "frame_origins", tool.FrameAncestors(ctx))
		if cfg.frameAncestors == "'none'" {
			log.Warn("--frame-ancestors is 'none': LTI platforms cannot show the lessons in their pages; open links in a new window there")
		}
	}
	return tool, nil
}

// runLTI is "server lti ...": registering platforms and rotating the
// tool's key, in the server's database: the SQLite file under --data
// (DATA), or the Postgres of --database-url (DATABASE_URL). A running server sees
// a platform added here at its next login from it (and frames its pages
// within 30 s), and signs with a rotated key once it is due.
func runLTI(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError{ltiUsage}
	}
	set := envflag.New("server lti " + args[0])
	fs := set.FlagSet()
	data := set.Add(envflag.Setting{Flag: "data", Env: "DATA", Default: "./data", Usage: "directory of the SQLite file"})
	databaseURL := set.Add(envflag.Setting{Flag: "database-url", Env: "DATABASE_URL", Usage: "the server's Postgres, when it uses one"})
	var p lti.Platform
	var now bool
	var file *envflag.Setting
	list := func(dst *[]string) func(string) error {
		return func(v string) error {
			for _, s := range strings.Split(v, ",") {
				if s = strings.TrimSpace(s); s != "" {
					*dst = append(*dst, s)
				}
			}
			return nil
		}
	}
	switch args[0] {
	case "add":
		fs.StringVar(&p.Name, "name", "", "a name for people (\"Moodle of Example University\")")
		fs.StringVar(&p.Issuer, "issuer", "", "the platform's issuer (iss), as it shows it")
		fs.StringVar(&p.ClientID, "client-id", "", "the client id the platform gave the tool")
		fs.Func("deployment", "a deployment id (repeat, or separate with commas)", list(&p.Deployments))
		fs.StringVar(&p.AuthURL, "auth-url", "", "the platform's OIDC authorization endpoint")
		fs.StringVar(&p.TokenURL, "token-url", "", "the platform's OAuth 2 token endpoint")
		fs.StringVar(&p.JWKSURL, "jwks-url", "", "the platform's public keyset URL")
		fs.StringVar(&p.TokenAudience, "token-audience", "", "aud of the tool's client assertion, if the platform wants another than the token URL")
		fs.Func("frame-origin", "an origin whose pages frame the tool (repeat); default: the issuer's", list(&p.FrameOrigins))
	case "remove":
		fs.StringVar(&p.Issuer, "issuer", "", "the platform's issuer")
		fs.StringVar(&p.ClientID, "client-id", "", "its client id")
	case "rotate-key":
		fs.BoolVar(&now, "now", false, "sign with the new key at once (for a key that leaked), instead of after "+lti.KeyPublishDelay.String())
	case "list":
		file = set.Add(envflag.Setting{Flag: "lti-platforms", Env: "LTI_PLATFORMS", Shown: "none", Usage: "the platforms file the server reads too"})
	default:
		return usageError{fmt.Sprintf("server lti %q: unknown subcommand\n%s", args[0], ltiUsage)}
	}
	if err := set.Parse(args[1:], getenv, stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("server lti %s: unexpected argument %q\n%s", args[0], fs.Arg(0), ltiUsage)}
	}
	if args[0] == "add" {
		if err := lti.CheckPlatform(p); err != nil {
			return usageError{"server lti add: " + flagNames(err.Error())}
		}
	}
	if args[0] == "remove" && (p.Issuer == "" || p.ClientID == "") {
		return usageError{"server lti remove: --issuer and --client-id are both needed"}
	}
	st, err := openStore(ctx, databaseURL.Value, data.Value)
	if err != nil {
		return err
	}
	defer st.Close()
	switch args[0] {
	case "add":
		if err := st.SaveLTIPlatform(ctx, p); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "registered %s (issuer %s, client id %s, deployments %s); its pages may frame the tool from %s\n",
			cmpOr(p.Name, "the platform"), p.Issuer, p.ClientID, strings.Join(p.Deployments, ", "), strings.Join(lti.FrameOriginsOf(p), " "))
	case "remove":
		ok, err := st.DeleteLTIPlatform(ctx, p.Issuer, p.ClientID)
		if err != nil {
			return err
		}
		if !ok {
			return usageError{fmt.Sprintf("server lti remove: no stored platform with issuer %q and client id %q (server lti list shows them)", p.Issuer, p.ClientID)}
		}
		fmt.Fprintf(stdout, "removed issuer %s, client id %s\n", p.Issuer, p.ClientID)
	case "rotate-key":
		k, err := lti.RotateKey(ctx, st, time.Now(), now)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "new key %s is published now and signs from %s; the key before it stays published until the next rotation\n",
			k.ID, k.SignsFrom.UTC().Format(time.RFC3339))
	case "list":
		return listLTI(ctx, st, file.Value, stdout)
	}
	return nil
}

// flagNames turns lti.CheckPlatform's field names into this command's
// flags (client_id → --client-id).
func flagNames(msg string) string {
	field, rest, ok := strings.Cut(msg, " ")
	if !ok {
		return msg
	}
	switch field {
	case "issuer", "client_id", "deployments", "auth_url", "token_url", "jwks_url", "frame_origins":
		f := map[string]string{"deployments": "deployment", "frame_origins": "frame-origin"}[field]
		if f == "" {
			f = strings.ReplaceAll(field, "_", "-")
		}
		return "--" + f + " " + rest
	}
	return msg
}

// listLTI prints the registered platforms and the tool's keys.
func listLTI(ctx context.Context, st *store.Store, file string, stdout io.Writer) error {
	stored, err := st.LTIPlatforms(ctx)
	if err != nil {
		return err
	}
	var fromFile []lti.Platform
	if file != "" {
		if fromFile, err = lti.ReadPlatformsFile(file); err != nil {
			return err
		}
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FROM\tNAME\tISSUER\tCLIENT ID\tDEPLOYMENTS\tFRAME ORIGINS")
	row := func(from string, p lti.Platform) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", from, cmpOr(p.Name, "-"), p.Issuer, p.ClientID, strings.Join(p.Deployments, ","), strings.Join(lti.FrameOriginsOf(p), " "))
	}
	for _, p := range fromFile {
		row("file", p)
	}
	for _, p := range stored {
		row("stored", p)
	}
	tw.Flush()
	if len(stored)+len(fromFile) == 0 {
		fmt.Fprintln(stdout, "no platform is registered: add one with server lti add")
	}
	keys, err := st.LTIKeys(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout)
	if len(keys) == 0 {
		fmt.Fprintln(stdout, "the tool has no key yet: the server makes one at the first request that needs it")
		return nil
	}
	tw = tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tCREATED\tSIGNS FROM")
	for _, k := range keys {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", k.ID, k.CreatedAt.UTC().Format(time.RFC3339), k.SignsFrom.UTC().Format(time.RFC3339))
	}
	return tw.Flush()
}
