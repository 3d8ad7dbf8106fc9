package harness

import (
	"testing"
)

// StartProxiedCluster is StartCluster with a byte-level Proxy in front of
// every node's client listener, advertised (advertised.listeners) as the
// node's PLAINTEXT address: clients that follow the metadata, and the
// followers' fetchers, which reach a leader at its advertised address,
// go through proxies[i] to node i+1. Broker.Addr stays the node's own
// address, for requests that must bypass the proxy; the CONTROLLER
// listener (heartbeats, Raft) is never proxied. So holding a node's proxy
// cuts its replication and its clients off while it stays a live,
// heartbeating member of the cluster.
func StartProxiedCluster(t testing.TB, n int, overrides ...string) (*Cluster, []*Proxy) {
	t.Helper()
	var proxies []*Proxy
	c := startCluster(t, n, func(i int, clientAddr string) []string {
		p := StartProxy(t, clientAddr)
		proxies = append(proxies, p)
		return []string{"advertised.listeners=PLAINTEXT://" + p.Addr()}
	}, overrides)
	return c, proxies
}
