package embedded

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// clickhouseExtras are settings of a base configuration that two servers on
// one machine cannot share and that StartClickHouse does not set by name:
// ports and folders that newer configurations add (mysql_port,
// postgresql_port, grpc_port, user_scripts_path, ...).
type clickhouseExtras struct {
	ports []string // top-level *_port elements, each given a free port
	paths []string // top-level *_path elements, each given a folder in Dir
}

// handledByName reports the settings newClickHouseProcess overrides by name.
func handledByName(name string) bool {
	switch name {
	case "tcp_port", "http_port", "interserver_http_port",
		"path", "tmp_path", "user_files_path", "format_schema_path":
		return true
	}
	return false
}

// clickhouseCollisions reads the top level of a server configuration and
// lists the ports and folders a second server would collide on. Commented
// elements are not seen by the decoder, so only active settings count.
func clickhouseCollisions(configFile string) (clickhouseExtras, error) {
	var ex clickhouseExtras
	f, err := os.Open(configFile)
	if err != nil {
		return ex, fmt.Errorf("clickhouse config: %w", err)
	}
	defer f.Close()
	dec := xml.NewDecoder(f)
	depth := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return ex, nil
		}
		if err != nil {
			return ex, fmt.Errorf("clickhouse config %s: %w", configFile, err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			name := t.Name.Local
			if depth != 2 || handledByName(name) {
				continue
			}
			switch {
			case strings.HasSuffix(name, "_port"):
				ex.ports = append(ex.ports, name)
			case strings.HasSuffix(name, "_path"):
				ex.paths = append(ex.paths, name)
			}
		case xml.EndElement:
			depth--
		}
	}
}
