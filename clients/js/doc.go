// Package jsclient holds the JavaScript client module (index.js, the npm
// package @offlinebox/client) for Go code that serves it: the web page
// serves these bytes at /static/offlinebox.js, so the module shipped and
// the module the page runs are one file.
package jsclient
