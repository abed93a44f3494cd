package embedded

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

var clusterNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// WriteClickHouseClusterConfig writes, into dir, a copy of the base
// configuration (DefaultClickHouseConfig when empty) and its users.xml,
// with a config.d/ file that adds cluster to remote_servers: one shard per
// native port in tcpPorts, each a single replica on 127.0.0.1. It returns
// the configuration file to give ClickHouseOptions.ConfigFile, so that
// servers started on those ports form the cluster.
func WriteClickHouseClusterConfig(dir, base, cluster string, tcpPorts []int) (string, error) {
	if base == "" {
		base = DefaultClickHouseConfig
	}
	if !clusterNameRE.MatchString(cluster) {
		return "", fmt.Errorf("embedded: cluster name %q may hold only letters, digits and '_'", cluster)
	}
	if len(tcpPorts) == 0 {
		return "", fmt.Errorf("embedded: a cluster needs at least one shard")
	}
	if err := makeDir(filepath.Join(dir, "config.d")); err != nil {
		return "", err
	}
	for _, name := range []string{filepath.Base(base), "users.xml"} {
		b, err := os.ReadFile(filepath.Join(filepath.Dir(base), name))
		if err != nil {
			return "", fmt.Errorf("clickhouse cluster config: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return "", fmt.Errorf("clickhouse cluster config: %w", err)
		}
	}
	var shards strings.Builder
	for _, p := range tcpPorts {
		fmt.Fprintf(&shards, "      <shard><replica><host>%s</host><port>%d</port></replica></shard>\n", Loopback, p)
	}
	doc := fmt.Sprintf("<yandex>\n  <remote_servers>\n    <%s>\n%s    </%s>\n  </remote_servers>\n</yandex>\n",
		cluster, shards.String(), cluster)
	if err := os.WriteFile(filepath.Join(dir, "config.d", "cluster.xml"), []byte(doc), 0o644); err != nil {
		return "", fmt.Errorf("clickhouse cluster config: %w", err)
	}
	return filepath.Join(dir, filepath.Base(base)), nil
}
