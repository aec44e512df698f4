import type { z } from 'zod';

/** The schema inside optional / nullable / default / readonly wrappers and pipes (the input side). */
export function unwrap(s: z.ZodType): z.ZodType {
  for (;;) {
    const def = s._zod.def as { type: string; innerType?: z.ZodType; in?: z.ZodType };
    if (['optional', 'nullable', 'default', 'prefault', 'readonly'].includes(def.type) && def.innerType)
      s = def.innerType;
    else if (def.type === 'pipe' && def.in) s = def.in;
    else return s;
  }
}
