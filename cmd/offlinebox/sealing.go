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
	"text/tabwriter"

	"github.com/offlinebox/offlinebox/chstore"
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

// runKeys manages the master keys: add, list, rekey, retire.
func runKeys(ctx context.Context, args []string, stdout io.Writer) error {
	return runVerbs(ctx, "keys", []verb{
		{"add", "append a new random master key to -key-file (it becomes the newest)", runKeysAdd},
		{"list", "each master key of the ring and the stores, and how many data keys it wraps", runKeysList},
		{"rekey", "rewrap every data key by the newest master key", keysStoreVerb("rekey")},
		{"retire", "forget master key -id once it wraps no data key", keysStoreVerb("retire")},
	}, args, stdout)
}

func runKeysAdd(_ context.Context, args []string, stdout io.Writer) error {
	var id string
	c, _, err := parseStackUsage("keys add", "-id ID -key-file FILE", args, func(fs *flag.FlagSet) {
		fs.StringVar(&id, "id", "", "the new master key's id")
	})
	if err != nil {
		return err
	}
	return addMasterKey(c.KeyFile, id, stdout)
}

// keyStores is what the store-side verbs work on: the ring, Redis and
// the durable copy in ClickHouse. close releases them.
type keyStores struct {
	ring *seal.FileRing
	st   *redisstore.Store
	ch   *chstore.Store
}

func (k *keyStores) close() {
	if k.ch != nil {
		_ = k.ch.Close()
	}
	if k.st != nil {
		_ = k.st.Client().Close()
	}
}

func openKeyStores(ctx context.Context, verb string, c *stackConfig) (*keyStores, error) {
	c.StoreWait = toolWait
	ring, err := keyRing(c)
	if err != nil {
		return nil, err
	}
	if ring == nil {
		return nil, fmt.Errorf("keys %s: no key ring: give -key-file or %s", verb, masterKeysEnv)
	}
	k := &keyStores{ring: ring}
	if k.st, err = openStore(ctx, c); err != nil {
		return nil, err
	}
	// the durable copy of the data keys is rewrapped and checked too
	if k.ch, err = openClickHouse(ctx, c); err != nil {
		k.close()
		return nil, err
	}
	return k, nil
}

// keysStoreVerb is rekey or retire.
func keysStoreVerb(verb string) func(context.Context, []string, io.Writer) error {
	return func(ctx context.Context, args []string, stdout io.Writer) error {
		var id string
		c, _, err := parseStack("keys "+verb, args, func(fs *flag.FlagSet) {
			if verb == "retire" {
				fs.StringVar(&id, "id", "", "the master key to retire")
			}
		})
		if err != nil {
			return err
		}
		if verb == "retire" && id == "" {
			return errors.New("keys retire: -id is required")
		}
		k, err := openKeyStores(ctx, verb, c)
		if err != nil {
			return err
		}
		defer k.close()
		if verb == "rekey" {
			res, err := seal.Rekey(ctx, k.ring, k.st, k.ch)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "rekeyed: %d data keys rewrapped by %s, %d already were; %d rewrapped in ClickHouse\n",
				res.Rewrapped, k.ring.Newest(), res.Current, res.DurableRewrapped)
			return nil
		}
		if err := seal.Retire(ctx, k.ring, k.st, k.ch, id); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "master key %s wraps no data key any more; remove it from the key file\n", id)
		return nil
	}
}

// runKeysList prints each master key and the data keys it wraps.
func runKeysList(ctx context.Context, args []string, stdout io.Writer) error {
	c, _, err := parseStack("keys list", args, nil)
	if err != nil {
		return err
	}
	k, err := openKeyStores(ctx, "list", c)
	if err != nil {
		return err
	}
	defer k.close()
	uses, err := seal.Usage(ctx, k.ring, k.ring.IDs(), k.st, k.ch)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "master key\tdata keys (redis)\tdata keys (clickhouse)\tnote")
	for _, u := range uses {
		note := ""
		switch {
		case u.Newest:
			note = "newest: wraps new data keys"
		case !u.InRing:
			note = "NOT IN THE RING: its data keys cannot be opened"
		case u.Stored+u.Durable == 0:
			note = "wraps nothing: may be retired"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", u.ID, u.Stored, u.Durable, note)
	}
	return tw.Flush()
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
