package main

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// The demo writes where everything runs, and its JWT secret, to an env
// file in its data folder; every subcommand reads it for what neither a
// flag nor the environment gives. `set -a; . .data/offlinebox.env` works
// too. The file exists while a demo serves: it is removed when the demo
// stops, so a tool run after that does not quietly talk to nothing.
const (
	envFileName = "offlinebox.env"
	// defaultEnvFile is where the demo writes it with its default -data.
	defaultEnvFile = ".data/" + envFileName
	// envFileVar names another env file; "none" reads none.
	envFileVar = "OFFLINEBOX_ENV_FILE"
	// envAPI is the base URL of the demo's API, for clients.
	envAPI = "OFFLINEBOX_API"
)

// sources is where settings come from after the command line: the process
// environment, then the env file.
type sources struct {
	environ  func(string) (string, bool)
	file     map[string]string
	filePath string
}

// loadSources reads the environment and the env file named by
// OFFLINEBOX_ENV_FILE (default .data/offlinebox.env). A missing file is
// no error; an unreadable one is.
func loadSources() (sources, error) {
	s := sources{environ: os.LookupEnv}
	path, ok := os.LookupEnv(envFileVar)
	if !ok || path == "" {
		path = defaultEnvFile
	}
	if path == "none" {
		return s, nil
	}
	vals, err := readEnvFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, err
	}
	s.file, s.filePath = vals, path
	return s, nil
}

// lookup returns name's value and where it came from.
func (s sources) lookup(name string) (value, from string, ok bool) {
	if s.environ != nil {
		if v, ok := s.environ(name); ok && v != "" {
			return v, "env " + name, true
		}
	}
	if v, ok := s.file[name]; ok && v != "" {
		return v, s.filePath, true
	}
	return "", "", false
}

// readEnvFile parses KEY=value lines; blank lines and # comments are
// skipped, and single or double quotes around a value are removed.
func readEnvFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	vals := map[string]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("env file %s line %d: want KEY=value", path, n)
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '\'' || v[0] == '"') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		vals[strings.TrimSpace(k)] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read env file %s: %w", path, err)
	}
	return vals, nil
}

// writeEnvFile writes vals to path, readable by its owner only (it holds
// the secret), replacing the file atomically.
func writeEnvFile(path, header string, vals map[string]string) error {
	keys := make([]string, 0, len(vals))
	for k := range vals {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, l := range strings.Split(header, "\n") {
		b.WriteString("# " + l + "\n")
	}
	for _, k := range keys {
		fmt.Fprintf(&b, "%s='%s'\n", k, vals[k])
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), envFileName+".*")
	if err != nil {
		return fmt.Errorf("write env file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("write env file: %w", err)
	}
	if _, err := tmp.WriteString(b.String()); err != nil {
		tmp.Close()
		return fmt.Errorf("write env file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write env file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write env file: %w", err)
	}
	return nil
}
