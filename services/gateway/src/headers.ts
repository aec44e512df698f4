import type { FastifyRequest } from 'fastify';

/** A request header given once and not empty, else undefined. */
export const header = (req: FastifyRequest, name: string): string | undefined => {
  const v = req.headers[name];
  return typeof v === 'string' && v.length > 0 ? v : undefined;
};
