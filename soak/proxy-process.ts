import { FaultProxy, type ProxyCommand } from './proxy.ts';

/**
 * The fault proxies in a process of their own: every byte between the services and PostgreSQL or
 * NATS passes through them, so they must not wait behind the load generator's event loop.
 * Started by soak/stack.ts with `name=port` arguments; answers on the IPC channel.
 */
const proxies = new Map<string, FaultProxy>();
for (const arg of process.argv.slice(2)) {
  const [name, port] = arg.split('=');
  const p = new FaultProxy(name!, Number(port));
  await p.start();
  proxies.set(name!, p);
}
process.send?.({ ports: Object.fromEntries([...proxies].map(([n, p]) => [n, p.port])) });
process.on('message', (m: ProxyCommand) => {
  if (m.cmd === 'stats') {
    process.send?.({ stats: Object.fromEntries([...proxies].map(([n, p]) => [n, p.stats])) });
    return;
  }
  const p = proxies.get(m.name);
  if (m.cmd === 'latency') p?.setLatency(m.ms);
  else if (m.cmd === 'cut') p?.cutAll();
  else p?.restore();
  process.send?.({ done: m.cmd });
});
process.on('disconnect', () => process.exit(0));
