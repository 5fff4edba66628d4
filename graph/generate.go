package graph

//go:generate go run ./gqlgen
