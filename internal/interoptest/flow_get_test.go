package interoptest_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
)

// TestInteropGetFlowRemovedChild: a parent keeps the key of a child that
// completed with removeOnComplete (in :processed) or failed with
// removeOnFail under ignoreDependencyOnFailure (in :failed), though the
// child's job is gone. Node's FlowProducer.getFlow keeps an undefined entry
// for each; drover's Queue.GetFlow a node with a nil Job and the child's
// Ref. The two trees must have the same shape, in the same order
// (processed, pending, failed, ignored).
//
//	go test -count=1 -run 'TestInteropGetFlowRemovedChild' ./internal/interoptest/
func TestInteropGetFlowRemovedChild(t *testing.T) {
	t.Parallel()
	b := newSetup(t)(t)
	ctx := context.Background()
	echo := bullmqoracle.Echo()
	fail := bullmqoracle.Fail("child broke")
	side{t, b, nodeImpl}.flow(node("p", queueName, &echo, nil,
		node("gone-done", partsQueue, &echo, map[string]any{"removeOnComplete": true}),
		node("pending", partsQueue, &echo, map[string]any{"delay": 60000},
			node("grandchild", partsQueue, &echo, map[string]any{"delay": 60000})),
		node("gone-failed", partsQueue, &fail, map[string]any{"removeOnFail": true, "ignoreDependencyOnFailure": true})))
	stop := b.startWorkerOn(t, droverImpl, partsQueue, workerSpec{behavior: bullmqoracle.FromData("behavior")})
	readQueueEvents(t, b.rdb, b.prefix, partsQueue, 2, func(e drover.Event) bool {
		return e.Name == drover.EventCompleted || e.Name == drover.EventFailed
	}, waitLong)
	stop()

	nodeTree, err := b.oracle.GetFlow(ctx, b.prefix, queueName, "p", 0, 0)
	require.NoError(t, err)
	tree, err := b.dq.GetFlow(ctx, "p", nil)
	require.NoError(t, err)

	// view renders drover's tree as the oracle renders Node's: a node
	// without a job is nil.
	var view func(n *drover.JobNode) *bullmqoracle.FlowNode
	view = func(n *drover.JobNode) *bullmqoracle.FlowNode {
		if n.Job == nil {
			return nil
		}
		v := &bullmqoracle.FlowNode{ID: n.Job.ID, Queue: n.Ref.Queue, Children: []*bullmqoracle.FlowNode{}}
		for _, c := range n.Children {
			v.Children = append(v.Children, view(c))
		}
		return v
	}
	want := &bullmqoracle.FlowNode{ID: "p", Queue: queueName, Children: []*bullmqoracle.FlowNode{
		nil,
		{ID: "pending", Queue: partsQueue, Children: []*bullmqoracle.FlowNode{{ID: "grandchild", Queue: partsQueue, Children: []*bullmqoracle.FlowNode{}}}},
		nil,
	}}
	require.Equal(t, want, nodeTree, "Node's getFlow")
	require.Equal(t, nodeTree, view(tree), "drover's GetFlow vs Node's getFlow")

	// What drover knows of the removed children: their refs.
	require.Equal(t, drover.JobRef{Prefix: b.prefix, Queue: partsQueue, ID: "gone-done"}, tree.Children[0].Ref)
	require.Equal(t, drover.JobRef{Prefix: b.prefix, Queue: partsQueue, ID: "gone-failed"}, tree.Children[2].Ref)
	require.Empty(t, tree.Children[0].Children)
	require.Equal(t, drover.JobRef{Prefix: b.prefix, Queue: queueName, ID: "p"}, tree.Ref)
}
