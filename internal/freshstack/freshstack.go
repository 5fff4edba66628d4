// Package freshstack keeps long-lived goroutines' stacks shallow: it runs their deep calls on
// short-lived goroutines (Run) and lets them wait for a peer at shallow depth (AwaitReadable).
//
// A goroutine's stack grows to the deepest call it ever made and only shrinks, by halves, in
// later garbage collections. The goroutines that live as long as a connection (a WebSocket's
// reader, a subscription's stream) sit idle and shallow nearly all the time, but now and then
// make a deep call (a Redis or MongoDB read, a GraphQL answer's encoding): made on a
// short-lived goroutine instead, it leaves the long-lived one's stack small, which is most of
// what an idle connection costs. A stack is halved only while less than a quarter of it is in
// use, so an idle goroutine that waits below a deep frame keeps a large stack for good.
package freshstack

// Run runs f on a goroutine of its own and waits for it to return. A panic in f is raised
// again in the caller, so that recovery works as if f had run in place.
func Run(f func()) {
	done := make(chan any, 1)
	go func() {
		defer func() { done <- recover() }()
		f()
	}()
	if p := <-done; p != nil {
		panic(p)
	}
}
