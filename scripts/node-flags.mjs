// V8 heap flags of every service process in its production form (npm start, the benchmark's and
// the scale test's compiled processes; deploy/Dockerfile sets the same NODE_OPTIONS, checked by
// test/deploy). Without them V8 sizes the heap for the machine, not the service: under load the
// gateway's heap swung up to ~100 MB between major collections and its RSS peaked near 200 MB.
// A young generation of 8 MB semi-spaces and an old generation capped at 96 MB keep every service
// near or below ~120 MB at the same throughput (bench/README.md).
export const SERVICE_NODE_OPTIONS = '--max-old-space-size=96 --max-semi-space-size=8';

/** NODE_OPTIONS for a service process: the service flags, then whatever the caller adds. */
export function serviceNodeOptions(extra = process.env.NODE_OPTIONS ?? '') {
  return `${SERVICE_NODE_OPTIONS} ${extra}`.trim();
}
