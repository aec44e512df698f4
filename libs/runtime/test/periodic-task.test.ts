import { afterEach, describe, expect, it } from 'vitest';
import { createLogger, PeriodicTask } from '../src/index.ts';

/** The periodic task: the pause, `wake` (coalesced), "again at once while there is more", stop, failures. */
const log = createLogger('test', 'silent');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const tasks: { stop(): Promise<void> }[] = [];

async function until(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await sleep(5);
  }
}

function task<T>(opts: { intervalMs: number; run: () => Promise<T>; more?: (r: T) => boolean }): PeriodicTask<T> {
  const t = new PeriodicTask({ name: 'test', log, ...opts });
  tasks.push(t);
  return t;
}

afterEach(async () => {
  await Promise.all(tasks.splice(0).map((t) => t.stop()));
});

describe('PeriodicTask', () => {
  it('runs a pass after each pause, never two at once', async () => {
    let running = 0;
    let most = 0;
    let passes = 0;
    const t = task({
      intervalMs: 20,
      run: async () => {
        most = Math.max(most, ++running);
        await sleep(5);
        running--;
        return ++passes;
      },
    });
    t.start();
    expect(passes).toBe(0); // the first pass waits for the pause
    await Promise.all([t.runNow(), t.runNow()]);
    await until(() => passes >= 5); // and the periodic ones

    expect(most).toBe(1);
  });

  it('wake() starts the next pass at once; wakes before it starts make one pass', async () => {
    let passes = 0;
    const t = task({ intervalMs: 60_000, run: async () => ++passes });
    t.start();
    t.wake();
    t.wake();
    t.wake();
    await sleep(30);
    expect(passes).toBe(1);
    t.wake();
    await sleep(30);
    expect(passes).toBe(2);
  });

  it('a wake during a pass makes one more pass right after it', async () => {
    let passes = 0;
    let release: () => void = () => undefined;
    const t = task({
      intervalMs: 60_000,
      run: async () => {
        passes++;
        if (passes === 1) await new Promise<void>((r) => (release = r));
        return passes;
      },
    });
    t.start();
    t.wake();
    await sleep(10);
    expect(passes).toBe(1);
    t.wake();
    t.wake();
    release();
    await sleep(30);
    expect(passes).toBe(2);
  });

  it('runs again at once while a pass says there is more, then waits for the pause', async () => {
    let backlog = 5;
    let passes = 0;
    const t = task({
      intervalMs: 60_000,
      run: async () => {
        passes++;
        backlog = Math.max(0, backlog - 2);
        return backlog;
      },
      more: (left) => left > 0,
    });
    t.start();
    t.wake();
    await sleep(50);
    expect(backlog).toBe(0);
    expect(passes).toBe(3); // 5 -> 3 -> 1 -> 0, and no pass after that within the interval
  });

  it('a failed pass is logged and tried again after the pause', async () => {
    let passes = 0;
    const t = task({
      intervalMs: 10,
      run: async () => {
        passes++;
        if (passes === 1) throw new Error('boom');
        return passes;
      },
    });
    t.start();
    await until(() => passes >= 2);
  });

  it('stop: the pass in progress finishes, no new pass starts, not even on wake', async () => {
    let passes = 0;
    let finished = 0;
    const t = task({
      intervalMs: 5,
      run: async () => {
        passes++;
        await sleep(20);
        finished++;
        return passes;
      },
      more: () => true,
    });
    t.start();
    t.wake();
    await sleep(5);
    await t.stop();
    expect(finished).toBe(passes);
    const after = passes;
    t.wake();
    await sleep(30);
    expect(passes).toBe(after);
  });
});
