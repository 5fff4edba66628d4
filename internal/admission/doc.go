// Package admission decides, per gateway instance, how much work goes to each dependency (the
// message store, Redis) and refuses the rest at once with a retry hint, instead of letting it
// queue into its request's time limit: a Limiter bounds the operations in flight and the
// queue before them, and a Pacer spaces out new connections. It imports only the standard
// library, so the adapters (chunkstore, cache) and the GraphQL boundary can all use it without
// depending on each other.
package admission
