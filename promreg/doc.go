// Package promreg registers a component's Prometheus collectors: every
// worker, the API and the tools make theirs through a Set (or hand them to
// All), so that a nil registerer (a test, a tool without a metrics
// listener) and the first failed registration are handled in one place.
package promreg
