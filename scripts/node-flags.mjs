// V8 heap flags of every service process in its production form (npm start, the benchmark's and
// the scale test's compiled processes; deploy/Dockerfile sets the same NODE_OPTIONS, checked by
// test/deploy). Without them V8 sizes the heap for the machine, not the service, and a busy
// gateway's heap swings far between major collections. Small semi-spaces and a capped old
// generation keep every service's memory bounded at the same throughput (figures in bench/README.md).
export const SERVICE_NODE_OPTIONS = '--max-old-space-size=96 --max-semi-space-size=4';

// The environment of every service process beside NODE_OPTIONS (deploy/Dockerfile sets the same).
// glibc's malloc gives each thread that allocates its own arena (up to 8 per core); libuv's pool
// threads and V8's helpers each held megabytes that were never returned. Two arenas cost no
// measured throughput and take 10-20 MB off each service's peak RSS (bench/README.md, issue 20).
export const SERVICE_ENV = { MALLOC_ARENA_MAX: '2' };

/** NODE_OPTIONS for a service process: the service flags, then whatever the caller adds. */
export function serviceNodeOptions(extra = process.env.NODE_OPTIONS ?? '') {
  return `${SERVICE_NODE_OPTIONS} ${extra}`.trim();
}
