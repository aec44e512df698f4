// Preloaded into each service by `npm run bench -- --profile` (NODE_OPTIONS=--import, since
// Node 20 refuses --cpu-prof there): samples the CPU and the allocations with the inspector and
// writes $BENCH_PROFILE_DIR/CPU.<pid>.cpuprofile and HEAP.<pid>.heapprofile when the process exits.
// The allocation sampler records one allocation in about every 64 KB allocated, with its stack:
// where the garbage comes from, which the CPU profile shows only as "(garbage collector)".
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import path from 'node:path';

const dir = process.env.BENCH_PROFILE_DIR;
if (dir) {
  const session = new Session();
  session.connect();
  session.post('Profiler.enable');
  session.post('Profiler.setSamplingInterval', { interval: 500 });
  session.post('Profiler.start');
  session.post('HeapProfiler.enable');
  // includeObjectsCollectedByMajorGC/MinorGC: count what was allocated, not only what survived.
  session.post('HeapProfiler.startSampling', {
    samplingInterval: 65_536,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  // An in-thread inspector session answers synchronously, so this completes inside 'exit'.
  process.on('exit', () => {
    session.post('Profiler.stop', (err, result) => {
      if (!err) writeFileSync(path.join(dir, `CPU.${process.pid}.cpuprofile`), JSON.stringify(result.profile));
    });
    session.post('HeapProfiler.stopSampling', (err, result) => {
      if (!err) writeFileSync(path.join(dir, `HEAP.${process.pid}.heapprofile`), JSON.stringify(result.profile));
    });
  });
}
