// A cuzk.v1 client in Go, as Curio drives the daemon: the gRPC code is
// generated from the daemon's own service/proto/cuzk/v1/cuzk.proto with
// protoc, protoc-gen-go and protoc-gen-go-grpc (service/tests/go_client.rs
// does that into a temp dir and builds this file against Debian's Go
// packages, offline).
//
// It connects over the unix socket, calls Prove for a PoRep C2 whose C1
// output (Curio's wrapper or filecoin-proofs' JSON) is read from a file,
// then GetStatus, and prints one `key=value` per line: the proof as hex
// (also written to -proof-out), its timings and the status fields.
package main

import (
	"context"
	"encoding/hex"
	"flag"
	"fmt"
	"io/ioutil"
	"os"
	"sort"
	"time"

	pb "cuzkclient/cuzkv1"

	"google.golang.org/grpc"
)

func main() {
	addr := flag.String("addr", "", "the daemon's address: unix:///path/to/socket")
	c1 := flag.String("c1", "", "a file holding the C1 output")
	sector := flag.Uint64("sector", 0, "the sector number")
	miner := flag.Uint64("miner", 0, "the miner's actor id")
	registered := flag.Uint64("registered-proof", 5, "the seal proof number (5: StackedDrg2KiBV1_1)")
	sectorSize := flag.Uint64("sector-size", 2048, "the sector size in bytes")
	requestID := flag.String("request-id", "", "the idempotency key")
	proofOut := flag.String("proof-out", "", "where to write the proof bytes")
	timeout := flag.Duration("timeout", 5*time.Minute, "how long to wait for the proof")
	flag.Parse()
	if *addr == "" || *c1 == "" {
		fail("usage: -addr unix:///path -c1 FILE [-sector N -miner N -proof-out FILE]")
	}
	vanilla, err := ioutil.ReadFile(*c1)
	if err != nil {
		fail("reading the C1 output: %v", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	// grpc-go dials unix:///path itself (no resolver of its own is needed);
	// the authority is set as newer grpc-go does for unix sockets.
	conn, err := grpc.DialContext(ctx, *addr,
		grpc.WithInsecure(),
		grpc.WithBlock(),
		grpc.WithAuthority("localhost"),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(256<<20), grpc.MaxCallSendMsgSize(256<<20)),
	)
	if err != nil {
		fail("connecting to %s: %v", *addr, err)
	}
	defer conn.Close()
	client := pb.NewProvingEngineClient(conn)

	resp, err := client.Prove(ctx, &pb.ProveRequest{Submit: &pb.SubmitProofRequest{
		RequestId:       *requestID,
		ProofKind:       pb.ProofKind_POREP_SEAL_COMMIT,
		SectorSize:      *sectorSize,
		RegisteredProof: *registered,
		Priority:        pb.Priority_NORMAL,
		VanillaProof:    vanilla,
		SectorNumber:    *sector,
		MinerId:         *miner,
	}})
	if err != nil {
		fail("Prove: %v", err)
	}
	r := resp.GetResult()
	if r == nil {
		fail("Prove: no result")
	}
	fmt.Printf("job_id=%s\n", r.JobId)
	fmt.Printf("status=%s\n", r.Status)
	fmt.Printf("error_message=%s\n", r.ErrorMessage)
	fmt.Printf("proof_hex=%s\n", hex.EncodeToString(r.Proof))
	fmt.Printf("queue_wait_ms=%d\n", r.QueueWaitMs)
	fmt.Printf("srs_load_ms=%d\n", r.SrsLoadMs)
	fmt.Printf("synthesis_ms=%d\n", r.SynthesisMs)
	fmt.Printf("gpu_compute_ms=%d\n", r.GpuComputeMs)
	fmt.Printf("total_ms=%d\n", r.TotalMs)
	if *proofOut != "" {
		if err := ioutil.WriteFile(*proofOut, r.Proof, 0o644); err != nil {
			fail("writing the proof: %v", err)
		}
	}

	st, err := client.GetStatus(ctx, &pb.GetStatusRequest{})
	if err != nil {
		fail("GetStatus: %v", err)
	}
	fmt.Printf("status.total_proofs_completed=%d\n", st.TotalProofsCompleted)
	fmt.Printf("status.total_proofs_failed=%d\n", st.TotalProofsFailed)
	fmt.Printf("status.uptime_seconds=%d\n", st.UptimeSeconds)
	fmt.Printf("status.pinned_memory_bytes=%d\n", st.PinnedMemoryBytes)
	fmt.Printf("status.pinned_memory_limit_bytes=%d\n", st.PinnedMemoryLimitBytes)
	fmt.Printf("status.gpus=%d\n", len(st.Gpus))
	for _, g := range st.Gpus {
		fmt.Printf("status.gpu.%d=name:%s vram_total_bytes:%d vram_free_bytes:%d current_job_id:%s current_proof_kind:%s\n",
			g.Ordinal, g.Name, g.VramTotalBytes, g.VramFreeBytes, g.CurrentJobId, g.CurrentProofKind)
	}
	sort.Slice(st.Queues, func(i, j int) bool { return st.Queues[i].ProofKind < st.Queues[j].ProofKind })
	for _, q := range st.Queues {
		fmt.Printf("status.queue.%s=pending:%d in_progress:%d\n", q.ProofKind, q.Pending, q.InProgress)
	}
	fmt.Printf("status.loaded_srs=%d\n", len(st.LoadedSrs))
	for _, s := range st.LoadedSrs {
		fmt.Printf("status.srs=circuit_id:%s tier:%s size_bytes:%d\n", s.CircuitId, s.Tier, s.SizeBytes)
	}
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "go-client: "+format+"\n", args...)
	os.Exit(1)
}
