package main

// capacity is what the run measured for the capacity model.
type capacity struct{}
