package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// buildBaseline builds this program against the tree of commit: the
// commit's files are unpacked into dir, this program's sources (which
// that tree may not have) are put beside them, and the result is built
// there, so that its fanout, store and scripts are the commit's. The
// program therefore calls only what the harness of the baseline commit
// (8ac8aeb) already had: a helper added to the harness since would not
// build in that tree.
func buildBaseline(ctx context.Context, commit, dir string) (string, error) {
	top, err := exec.CommandContext(ctx, "git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return "", fmt.Errorf("find the repository: %w", err)
	}
	root := strings.TrimSpace(string(top))
	tree := filepath.Join(dir, "tree")
	if err := os.MkdirAll(tree, 0o755); err != nil {
		return "", err
	}
	unpack := exec.CommandContext(ctx, "sh", "-c", `git -C "$1" archive "$2" | tar -x -C "$3"`, "sh", root, commit, tree)
	if out, err := unpack.CombinedOutput(); err != nil {
		return "", fmt.Errorf("unpack %s: %w: %s", commit, err, out)
	}
	src, dst := filepath.Join(root, "bench", "write"), filepath.Join(tree, "bench", "write")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return "", err
	}
	files, err := filepath.Glob(filepath.Join(src, "*.go"))
	if err != nil {
		return "", err
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dst, filepath.Base(f)), data, 0o644); err != nil {
			return "", err
		}
	}
	exe := filepath.Join(dir, "write-baseline")
	build := exec.CommandContext(ctx, "go", "build", "-o", exe, "./bench/write")
	build.Dir = tree
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the baseline: %w: %s", err, out)
	}
	return exe, nil
}
