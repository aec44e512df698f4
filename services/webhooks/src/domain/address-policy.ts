import ipaddr from 'ipaddr.js';

/**
 * Which addresses a webhook may be sent to: only public unicast ones. Private (10/8, 172.16/12,
 * 192.168/16), loopback, link-local (169.254/16: cloud metadata; fe80::/10), unique-local
 * (fc00::/7), carrier-grade NAT, multicast, broadcast, unspecified and reserved ranges are refused,
 * and so are IPv6 forms that carry an IPv4 address of any of these (IPv4-mapped ::ffff:a.b.c.d is
 * judged as the IPv4 address; NAT64, 6to4 and Teredo, which can reach an embedded IPv4 address,
 * and the deprecated IPv4-compatible ::a.b.c.d are refused outright), and any IPv6 address outside
 * global unicast (2000::/3). The ranges are ipaddr.js's (IANA special-purpose registries).
 *
 * Answers why an address is refused (its range), or undefined when it is allowed.
 */
export function addressProblem(address: string): string | undefined {
  if (!ipaddr.isValid(address)) return 'not an IP address';
  // ::ffff:127.0.0.1 is 127.0.0.1: judge the IPv4 address it carries.
  const ip = ipaddr.process(address);
  const range = ip.range();
  if (range !== 'unicast') return range;
  // ipaddr.js calls every IPv6 address outside its special ranges unicast, ::/8 among them, where
  // the deprecated IPv4-compatible form (::a.b.c.d, `[::127.0.0.1]`) carries any IPv4 address. Only
  // 2000::/3 is global unicast: nothing else is a public IPv6 address.
  if (ip.kind() === 'ipv6' && !ip.match(GLOBAL_UNICAST))
    return ip.match(IPV4_COMPATIBLE) ? 'ipv4Compatible' : 'notGlobalUnicast';
  return undefined;
}

const GLOBAL_UNICAST = ipaddr.parseCIDR('2000::/3');
const IPV4_COMPATIBLE = ipaddr.parseCIDR('::/96');

/** Whether a URL host is an IP literal (`[::1]`, `10.0.0.1`): connecting to it needs no lookup. */
export function ipLiteral(hostname: string): string | undefined {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  return ipaddr.isValid(bare) ? bare : undefined;
}
