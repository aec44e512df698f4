// V8 heap flags of every service process in its production form (npm start, the benchmark's and
// the scale test's compiled processes; deploy/Dockerfile sets the same NODE_OPTIONS, checked by
// test/deploy). Without them V8 sizes the heap for the machine, not the service, and a busy
// gateway's heap swings far between major collections. Small semi-spaces and a capped old
// generation keep every service's memory bounded at the same throughput (figures in bench/README.md).
// --v8-pool-size=2: V8's helper threads (parallel GC, compilation) for the 2 cores a service gets,
// not the default 4 (each thread's buffers are resident).
export const SERVICE_NODE_OPTIONS = '--max-old-space-size=96 --max-semi-space-size=1 --v8-pool-size=2';

// The environment of every service process beside NODE_OPTIONS (deploy/Dockerfile sets the same).
// glibc's malloc gives each thread that allocates its own arena (up to 8 per core); libuv's pool
// threads and V8's helpers each held megabytes that were never returned: two arenas. And glibc
// raises its mmap threshold as large blocks are freed, after which freed socket and JSON buffers
// stay in the heap instead of going back to the system: a fixed 128 KB threshold returns them.
// Together with the flags above they took 10-20 MB off each service's peak RSS at no measured
// throughput (bench/README.md).
export const SERVICE_ENV = { MALLOC_ARENA_MAX: '2', MALLOC_MMAP_THRESHOLD_: '131072' };

/** NODE_OPTIONS for a service process: the service flags, then whatever the caller adds. */
export function serviceNodeOptions(extra = process.env.NODE_OPTIONS ?? '') {
  return `${SERVICE_NODE_OPTIONS} ${extra}`.trim();
}
