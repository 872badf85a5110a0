//go:build browser

package main

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserSmoke opens the course index in chromium and reads its title:
// the harness itself works (browser starts, server answers, screenshot saved).
func TestBrowserSmoke(t *testing.T) {
	srv := start(t, nil, "--data", t.TempDir())
	ctx := newBrowser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.url+"/")); err != nil {
		t.Fatal(err)
	}
	title, err := chromedp.Run(ctx, chromedp.Title())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(title, "Capacity") {
		t.Errorf("index title = %q, want it to name the course", title)
	}
	screenshot(t, ctx, "index")
}
