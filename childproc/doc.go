// Package childproc is what the two children of a measurement share: the
// lab child (package labsvc) and the load child (package measure) are both
// this program started again, in a process group of its own, dying with
// the parent where the system allows it (Attr), with the last lines of
// their stderr kept (Tail) so that an unexpected exit can be reported with
// its reason and last words (ExitError).
package childproc
