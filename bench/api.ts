// A small HTTP client for provisioning and checks (the measured load goes through autocannon).
export interface AppCredentials {
  appId: string;
  apiKey: string;
}

export interface ApiReply<T = Record<string, unknown>> {
  status: number;
  body: { success: boolean; data?: T; error?: { code: string; message: string } & Record<string, unknown> };
}

export class Api {
  constructor(
    readonly url: string,
    private readonly operatorToken: string,
  ) {}

  /** Operator API (/admin/v1); throws on failure. */
  async admin<T>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await fetch(`${this.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${this.operatorToken}`,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = (await res.json()) as ApiReply<T>['body'];
    if (!json.success) throw new Error(`admin ${method} ${path} answered ${res.status}: ${JSON.stringify(json.error)}`);
    return json.data as T;
  }

  async call<T = Record<string, unknown>>(
    app: AppCredentials,
    method: string,
    path: string,
    opts: { body?: unknown; token?: string } = {},
  ): Promise<ApiReply<T>> {
    const headers: Record<string, string> = { 'x-app-id': app.appId, 'x-api-key': app.apiKey };
    if (opts.token) headers['x-member-token'] = opts.token;
    if (opts.body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${this.url}${path}`, {
      method,
      headers,
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    });
    return { status: res.status, body: (await res.json()) as ApiReply<T>['body'] };
  }

  /** Like call, but throws unless the answer is a success. */
  async ok<T = Record<string, unknown>>(
    app: AppCredentials,
    method: string,
    path: string,
    opts: { body?: unknown; token?: string } = {},
  ): Promise<T> {
    const r = await this.call<T>(app, method, path, opts);
    if (!r.body.success) throw new Error(`${method} ${path} answered ${r.status}: ${JSON.stringify(r.body.error)}`);
    return r.body.data as T;
  }
}

/** Run `fn` over `items` with at most `concurrency` in flight; results in input order. */
export async function pMap<T, R>(
  items: readonly T[],
  concurrency: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    for (;;) {
      const i = next++;
      if (i >= items.length) return;
      out[i] = await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
  return out;
}
