// Package testkit holds the rigs that drover's own tests run on: a real
// redis-server (redistest), throwaway PostgreSQL clusters (pgtest), a Redis
// Cluster and Sentinel (clustertest), Node BullMQ 6.7.0 driven from Go
// (bullmqoracle) and normalised Redis dumps (statedump). Product packages
// never import it (depguard enforces this); only _test.go files do.
//
// This package itself carries the one polling helper every suite shares.
package testkit
