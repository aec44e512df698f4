import ipaddr from 'ipaddr.js';

/**
 * Which addresses a webhook may be sent to: only public unicast ones. Private (10/8, 172.16/12,
 * 192.168/16), loopback, link-local (169.254/16: cloud metadata; fe80::/10), unique-local
 * (fc00::/7), carrier-grade NAT, multicast, broadcast, unspecified and reserved ranges are refused,
 * and so are IPv6 forms that carry an IPv4 address of any of these (IPv4-mapped ::ffff:a.b.c.d is
 * judged as the IPv4 address; NAT64, 6to4 and Teredo, which can reach an embedded IPv4 address,
 * are refused outright). The ranges are ipaddr.js's (IANA special-purpose registries).
 *
 * Answers why an address is refused (its range), or undefined when it is allowed.
 */
export function addressProblem(address: string): string | undefined {
  if (!ipaddr.isValid(address)) return 'not an IP address';
  // ::ffff:127.0.0.1 is 127.0.0.1: judge the IPv4 address it carries.
  const ip = ipaddr.process(address);
  const range = ip.range();
  return range === 'unicast' ? undefined : range;
}

/** Whether a URL host is an IP literal (`[::1]`, `10.0.0.1`): connecting to it needs no lookup. */
export function ipLiteral(hostname: string): string | undefined {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  return ipaddr.isValid(bare) ? bare : undefined;
}
