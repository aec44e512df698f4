/** `jane.doe@example.com` -> `ja******@example.com`: enough to recognise, not to harvest. */
export function maskEmail(email: string | null): string | null {
  if (!email) return email;
  const at = email.lastIndexOf('@');
  if (at <= 0) return '***';
  const local = email.slice(0, at);
  const keep = local.length <= 2 ? 1 : 2;
  return `${local.slice(0, keep)}${'*'.repeat(Math.max(local.length - keep, 3))}${email.slice(at)}`;
}

/** `+15551234567` -> `+1******4567`: the country prefix and the last four digits stay. */
export function maskPhone(phone: string | null): string | null {
  if (!phone) return phone;
  const plus = phone.startsWith('+') ? '+' : '';
  const digits = phone.slice(plus.length);
  if (digits.length <= 4) return plus + '*'.repeat(digits.length);
  const head = plus ? digits.slice(0, 1) : '';
  const tail = digits.slice(-4);
  return `${plus}${head}${'*'.repeat(digits.length - head.length - tail.length)}${tail}`;
}
