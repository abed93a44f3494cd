package embedded

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// SnapshotRedis takes a point-in-time copy of the data of the redis-server
// p while it serves (BGSAVE), and copies it to dst.
func SnapshotRedis(ctx context.Context, p *Process, dst string) error {
	rdb := redis.NewClient(&redis.Options{Addr: p.Addr(), DialTimeout: time.Second, ReadTimeout: 5 * time.Second})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	// BGSAVE answers once the child forked, which marks the save in
	// progress until it ends.
	if err := rdb.BgSave(ctx).Err(); err != nil {
		return fmt.Errorf("snapshot redis: %w", err)
	}
	for {
		info, err := rdb.Info(ctx, "persistence").Result()
		if err != nil {
			return fmt.Errorf("snapshot redis: %w", err)
		}
		if infoValue(info, "rdb_bgsave_in_progress") == "0" {
			if st := infoValue(info, "rdb_last_bgsave_status"); st != "ok" {
				return fmt.Errorf("snapshot redis: BGSAVE %s", st)
			}
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("snapshot redis: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return copyFile(filepath.Join(p.Dir(), "dump.rdb"), dst)
}

// ReplaceRedisData makes the stopped redis-server p start from the
// snapshot snap (SnapshotRedis) on its next start: its append-only files
// are replaced by one base file holding the snapshot, as if everything
// written after the snapshot had never reached the disk.
func ReplaceRedisData(p *Process, snap string) error {
	if p.Pid() != 0 {
		return fmt.Errorf("replace redis data: %s still runs", p.Addr())
	}
	dir := filepath.Join(p.Dir(), "appendonlydir")
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("replace redis data: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("replace redis data: %w", err)
	}
	const base = "appendonly.aof.1.base.rdb"
	if err := copyFile(snap, filepath.Join(dir, base)); err != nil {
		return err
	}
	manifest := "file " + base + " seq 1 type b\n"
	if err := os.WriteFile(filepath.Join(dir, "appendonly.aof.manifest"), []byte(manifest), 0o644); err != nil {
		return fmt.Errorf("replace redis data: %w", err)
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return fmt.Errorf("copy to %s: %w", dst, err)
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return fmt.Errorf("copy %s to %s: %w", src, dst, err)
	}
	return out.Close()
}

// infoValue is the value of one "name:value" line of an INFO answer.
func infoValue(info, name string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
}
