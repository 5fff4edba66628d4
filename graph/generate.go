package graph

//go:generate go tool gqlgen generate
