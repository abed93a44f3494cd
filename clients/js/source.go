package jsclient

import _ "embed"

// Module is index.js as shipped.
//
//go:embed index.js
var Module []byte
