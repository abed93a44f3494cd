// Package bounds holds the range rules that the configuration structs'
// Validate methods share. A Validate lists its fields' rules in the order
// they are checked, and First reports the first broken one prefixed with the
// owner, e.g. "fanout: MergeSize 0 is below 1", so every config names the
// field and value the same way.
package bounds
