package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/offlinebox/offlinebox/redisstore"
	"github.com/offlinebox/offlinebox/seal"
)

// masterKeysEnv holds master keys inline ("ID:BASE64,...", newest last),
// for deployments that inject secrets as variables. Never a flag: -h must
// not print it.
const masterKeysEnv = "OFFLINEBOX_MASTER_KEYS"

// keyRing loads the master keys: the key file (-key-file), else the
// environment; nil when neither is configured.
func keyRing(c *stackConfig) (*seal.FileRing, error) {
	if c.KeyFile != "" {
		ring, err := seal.LoadFileRing(c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("-key-file%s: %w", c.from("key-file"), err)
		}
		return ring, nil
	}
	if v := os.Getenv(masterKeysEnv); v != "" {
		keys, err := seal.ParseKeyList(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", masterKeysEnv, err)
		}
		ring, err := seal.NewFileRing(keys)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", masterKeysEnv, err)
		}
		return ring, nil
	}
	return nil, nil
}

// checkSealing checks the key ring against the store and returns it (nil
// without a key ring, after saying bodies are stored in the clear). A
// wrong or missing master key stops the start.
func checkSealing(ctx context.Context, c *stackConfig, st *redisstore.Store) (*seal.FileRing, error) {
	ring, err := keyRing(c)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if ring == nil {
		if err := seal.CheckClear(cctx, st); err != nil {
			return nil, fmt.Errorf("%w; give -key-file or %s", err, masterKeysEnv)
		}
		slog.Warn("no key ring configured: message bodies are stored in the clear in Redis, Kafka and ClickHouse (give -key-file or " + masterKeysEnv + ")")
		return nil, nil
	}
	if err := seal.Check(cctx, ring, st); err != nil {
		return nil, fmt.Errorf("key ring: %w", err)
	}
	slog.Info("bodies are sealed at rest", "master_keys", strings.Join(ring.IDs(), ","), "newest", ring.Newest())
	return ring, nil
}

// runKeys manages the master keys: add, rekey, retire.
func runKeys(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return errors.New("usage: offlinebox keys add -id ID | rekey | retire -id ID  (with -key-file)")
	}
	verb, args := args[0], args[1:]
	var id string
	c, _, err := parseStack("keys "+verb, args, func(fs *flag.FlagSet) {
		fs.StringVar(&id, "id", "", "master key id")
	})
	if err != nil {
		return err
	}
	switch verb {
	case "add":
		return addMasterKey(c.KeyFile, id, stdout)
	case "rekey", "retire":
	default:
		return fmt.Errorf("keys: unknown action %q (add, rekey, retire)", verb)
	}
	c.StoreWait = toolWait
	ring, err := keyRing(c)
	if err != nil {
		return err
	}
	if ring == nil {
		return fmt.Errorf("keys %s: no key ring: give -key-file or %s", verb, masterKeysEnv)
	}
	st, err := openStore(ctx, c)
	if err != nil {
		return err
	}
	defer st.Client().Close()
	// the durable copy of the data keys is rewrapped and checked too
	ch, err := openClickHouse(ctx, c)
	if err != nil {
		return err
	}
	defer ch.Close()
	if verb == "rekey" {
		res, err := seal.Rekey(ctx, ring, st, ch)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "rekeyed: %d data keys rewrapped by %s, %d already were; %d rewrapped in ClickHouse\n",
			res.Rewrapped, ring.Newest(), res.Current, res.DurableRewrapped)
		return nil
	}
	if id == "" {
		return errors.New("keys retire: -id is required")
	}
	if err := seal.Retire(ctx, ring, st, ch, id); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "master key %s wraps no data key any more; remove it from the key file\n", id)
	return nil
}

// addMasterKey appends a new random master key to the key file (created
// 0600 when missing); it becomes the newest. The key is never printed.
func addMasterKey(path, id string, stdout io.Writer) error {
	if path == "" {
		return errors.New("keys add: -key-file is required")
	}
	k, err := seal.GenerateMasterKey(id)
	if err != nil {
		return err
	}
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("read key file: %w", err)
	}
	keys, err := seal.ParseKeyFile(old)
	if err != nil {
		return fmt.Errorf("key file %s: %w", path, err)
	}
	if _, err := seal.NewFileRing(append(keys, k)); err != nil {
		return err
	}
	line, _ := json.Marshal(k)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("open key file: %w", err)
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		_ = f.Close()
		return fmt.Errorf("write key file: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write key file: %w", err)
	}
	fmt.Fprintf(stdout, "master key %s added to %s; new data keys are wrapped by it. Restart the processes, then `offlinebox keys rekey`.\n", id, path)
	return nil
}
