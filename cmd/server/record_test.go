package main

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// TestLessonsRecordUsage checks that `server lessons record` refuses bad
// command lines with a usage error (exit 2) naming what is wrong, before
// any lab is started. (The recording itself is tested in package lessons
// with real lab children.)
func TestLessonsRecordUsage(t *testing.T) {
	dir := copyContent(t)
	tests := []struct {
		name  string
		args  []string
		want  string
		usage bool
	}{
		// A scale above 1 would record longer windows than the presets say.
		{"scale above 1", []string{"lessons", "record", "--content", dir, "--seconds-scale", "2"}, `--seconds-scale "2" is not allowed`, true},
		// A scale that is not a number.
		{"scale not a number", []string{"lessons", "record", "--content", dir, "--seconds-scale", "fast"}, `--seconds-scale "fast" is not allowed`, true},
		// The content directory must exist.
		{"missing content", []string{"lessons", "record", "--content", filepath.Join(dir, "nope")}, `is not a directory`, true},
		// Stray arguments are not guessed at.
		{"stray argument", []string{"lessons", "record", "--content", dir, "littles-law"}, `unexpected argument "littles-law"`, true},
		// An unknown lesson is named, with the slugs there are.
		{"unknown lesson", []string{"lessons", "record", "--content", dir, "--lesson", "nope"}, `no lesson with slug "nope"`, false},
		// An unknown preset is named.
		{"unknown lab", []string{"lessons", "record", "--content", dir, "--lab", "nope"}, `no lab preset "nope"`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := run(context.Background(), tt.args, func(string) string { return "" }, io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one containing %q", err, tt.want)
			}
			var u usageError
			if got := errors.As(err, &u); got != tt.usage {
				t.Errorf("usage error = %v, want %v (exit code %d)", got, tt.usage, exitCode(err))
			}
		})
	}
}
