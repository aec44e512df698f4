import * as z from 'zod';

// The console's content security policy allows no eval: zod then parses without compiling parsers
// and never probes `new Function` (a probe the browser reports as a violation). A schema reads this
// when it is made, so main.tsx imports this module before any module that makes schemas.
z.config({ jitless: true });
