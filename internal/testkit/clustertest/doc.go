// Package clustertest starts real local Redis Cluster and Sentinel set-ups
// for drover's scale-out tests, and holds those tests.
//
// # Servers
//
// [StartCluster] starts masters*(1+replicas) `redis-server --cluster-enabled
// yes` processes on loopback ports p whose cluster bus port p+10000 is free
// too (ports are drawn from 12000-21999, so bus ports stay below the kernel's
// ephemeral range), joins them with `redis-cli --cluster create ...
// --cluster-replicas N --cluster-yes`, and waits until every node reports
// cluster_state:ok, all nodes agree on who serves every slot (CLUSTER
// SHARDS) and every replica is in sync. [Cluster.TagsByMaster] finds hash
// tags that land on each master, [Cluster.Failover] promotes a replica with
// CLUSTER FAILOVER.
//
// [StartSentinel] starts a master, its replica and three sentinels
// (`redis-server <conf> --sentinel`, quorum 2); [Sentinel.Failover] runs
// SENTINEL FAILOVER, [Sentinel.KillMaster] SIGKILLs the master and waits
// for the election, and [Sentinel.WaitSettled] waits for the old master to
// be demoted.
//
// [SharedCluster] (3 masters, 1 replica each) and [SharedSentinel] start one
// set-up per test binary on first use; [Main], called from TestMain, stops
// them. Every server gets its own temporary directory, a process group and a
// parent-death signal, so a test binary killed by -timeout takes its servers
// with it. A missing redis-server or redis-cli fails the test with install
// instructions: tests never skip. CLUSTER SHARDS needs Redis 7.0 or newer.
//
// # Tests
//
// The tests are behind the build tag "cluster", so the race-enabled run of
// ./internal/... does not pay for them:
//
//	go test -tags cluster -count=1 ./internal/testkit/clustertest/
//
// They cover, on the cluster: the interop and retry-lifecycle scenarios with
// Node BullMQ as the peer (TestClusterInterop); 100,000 jobs on 8 queues
// spread over the 3 masters, worked by 4 worker processes (this test binary
// re-executed, see child_test.go) with no loss and no CROSSSLOT
// (TestClusterHundredThousandJobs); CLUSTER FAILOVER during processing and
// while idle (TestClusterFailover, TestClusterFailoverIdleWorker); a master
// crash, its replica elected (TestClusterMasterKilled); SENTINEL FAILOVER
// under a go-redis failover client (TestSentinelFailover), and SENTINEL
// FAILOVER or a master SIGKILLed under a worker, a QueueEvents, a producer
// and a job scheduler on one failover client
// (TestSentinelFailoverEventsScheduler, TestSentinelMasterKilledEventsScheduler);
// a QueueEvents through a cluster master's crash or CLUSTER FAILOVER
// (TestClusterMasterKilledQueueEvents, TestClusterFailoverQueueEvents);
// refusal of queues without a hash tag on a cluster client
// (TestClusterMisconfiguration).
// BenchmarkClusterThroughput compares the same queues on 1 and on 3 masters.
//
// The load and failover tests do not call t.Parallel: they run one at a time,
// so that on a small machine one does not starve another's workers into
// losing locks, and the light tests run in parallel after them. The failover
// tests change the shared cluster's topology (which node is master) but
// leave it whole; tests look the topology up rather than assume it.
package clustertest
