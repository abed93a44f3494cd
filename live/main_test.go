package live

import (
	"testing"

	"github.com/offlinebox/offlinebox/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }
