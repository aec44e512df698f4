import dns, { type LookupAddress } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { addressProblem, ipLiteral } from './domain/address-policy.ts';
import { errorParts } from './error-parts.ts';

/** A webhook target that resolves to an address the platform does not send to. */
export class RefusedTargetError extends Error {
  override name = 'RefusedTargetError';
  readonly code = 'ERR_WEBHOOK_TARGET_REFUSED';
}

/**
 * The SSRF rule: webhooks go to public addresses only (domain/address-policy.ts), unless the
 * operator allows private targets (`WEBHOOK_ALLOW_PRIVATE_TARGETS=true`: development and tests).
 * It is checked when an endpoint is created or changed, and again on every connection the sender
 * opens: `lookup` is the connector's DNS resolution, so the address that is checked is the address
 * connected to; a name that resolved to a public address at creation and to 10.0.0.1 later (DNS
 * rebinding) is refused then. IP literals in URLs need no lookup and are checked by `refusal`.
 */
export class TargetGuard {
  /** The DNS lookup of the sender's connections (net.connect's `lookup`); undefined: the default one. */
  readonly lookup: LookupFunction | undefined;

  constructor(readonly allowPrivate: boolean) {
    this.lookup = allowPrivate
      ? undefined
      : (hostname, options, callback) => this.guardedLookup(hostname, options, callback);
  }

  /** Why this URL's host (an IP literal) may not be connected to; undefined when it may, or when it is a name. */
  literalRefusal(url: URL): string | undefined {
    if (this.allowPrivate) return undefined;
    const ip = ipLiteral(url.hostname);
    if (ip === undefined) return undefined;
    const problem = addressProblem(ip);
    return problem && `${ip} is not a public address (${problem})`;
  }

  /** Resolve the URL's host now and say why it is refused, or undefined (creation and changes). */
  async refusal(url: URL): Promise<string | undefined> {
    const literal = this.literalRefusal(url);
    if (literal || this.allowPrivate || ipLiteral(url.hostname) !== undefined) return literal;
    let addresses: LookupAddress[];
    try {
      addresses = await dns.promises.lookup(url.hostname, { all: true });
    } catch (err) {
      return `${url.hostname} does not resolve (${errorParts(err).code ?? 'lookup failed'})`;
    }
    return this.problemOf(url.hostname, addresses)?.message;
  }

  private problemOf(hostname: string, addresses: LookupAddress[]): RefusedTargetError | undefined {
    if (addresses.length === 0) return new RefusedTargetError(`${hostname} resolves to no address`);
    // One non-public address is enough to refuse: the connection could go to any of them.
    for (const a of addresses) {
      const problem = addressProblem(a.address);
      if (problem)
        return new RefusedTargetError(
          `${hostname} resolves to ${a.address}, which is not a public address (${problem})`,
        );
    }
    return undefined;
  }

  private guardedLookup(...[hostname, options, callback]: Parameters<LookupFunction>): void {
    dns.lookup(hostname, { all: true, family: options.family, hints: options.hints }, (err, addresses) => {
      if (err) return callback(err, '', 0);
      const refused = this.problemOf(hostname, addresses);
      const [first] = addresses; // none is refused above
      if (refused || !first)
        return callback(refused ?? new RefusedTargetError(`${hostname} resolves to no address`), '', 0);
      // Node asks for every address when it races them (autoSelectFamily), else for one.
      if (options.all) callback(null, addresses);
      else callback(null, first.address, first.family);
    });
  }
}
