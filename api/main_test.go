package api

import (
	"os"
	"testing"

	"github.com/offlinebox/offlinebox/internal/testenv"
)

// TestMain runs the tests, then checks every live frame they received
// against asyncapi.yaml (checkSeenFrames).
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		code = checkSeenFrames()
	}
	testenv.StopServers()
	os.Exit(code)
}
