// Preloaded into each service by `npm run bench -- --profile` (NODE_OPTIONS=--import, since
// Node 20 refuses --cpu-prof there): samples the CPU with the inspector and writes
// $BENCH_PROFILE_DIR/CPU.<pid>.cpuprofile when the process exits.
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
  // An in-thread inspector session answers synchronously, so this completes inside 'exit'.
  process.on('exit', () => {
    session.post('Profiler.stop', (err, result) => {
      if (!err) writeFileSync(path.join(dir, `CPU.${process.pid}.cpuprofile`), JSON.stringify(result.profile));
    });
  });
}
