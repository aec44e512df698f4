/** The longest member name a mail shows: a greeting, not a payload. */
export const MAIL_NAME_MAX = 100;
/** The longest reward name a mail shows. */
export const MAIL_REWARD_MAX = 100;
/** The longest staff note a mail shows. */
export const MAIL_NOTE_MAX = 500;
/** The longest subject a mail has. */
export const MAIL_SUBJECT_MAX = 150;

// Control characters (CR/LF in a subject would start a header of the attacker's choosing; in a
// body they make text that looks like ours), Unicode line/paragraph separators and the
// bidirectional overrides that make a text read differently from what it is.
const unsafe = /[\p{Cc}\p{Zl}\p{Zp}\u202A-\u202E\u2066-\u2069]+/gu;

/**
 * Text someone else supplied (a member's name, a staff note, a reward name), made fit for one line
 * of a text mail: unsafe characters and runs of whitespace become one space, and it is cut to
 * `max` characters (code points, so no emoji is split) with an ellipsis. Mails are plain text, so
 * nothing needs HTML escaping.
 */
export function mailText(value: unknown, max: number): string {
  const flat = String(value ?? '')
    .replace(unsafe, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  const chars = Array.from(flat);
  return chars.length <= max ? flat : `${chars.slice(0, max - 1).join('')}…`;
}
