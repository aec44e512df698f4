import { describe, expect, it } from 'vitest';
import { maskEmail, maskPhone } from '../src/domain/masking.ts';
import { matchesHash, newApiKey, newOtpCode, otpHash, otpMatches, sha256 } from '../src/domain/secrets.ts';

describe('masking', () => {
  it('keeps the start of the local part and the domain of an email', () => {
    expect(maskEmail('jane.doe@example.com')).toBe('ja******@example.com');
    expect(maskEmail('jo@example.com')).toBe('j***@example.com');
    expect(maskEmail(null)).toBeNull();
  });
  it('keeps the country prefix and the last four digits of a phone', () => {
    expect(maskPhone('+15551234567')).toBe('+1******4567');
    expect(maskPhone('0612345678')).toBe('******5678');
    expect(maskPhone(null)).toBeNull();
  });
});

describe('secrets', () => {
  it('draws 6-digit codes', () => {
    for (let i = 0; i < 200; i++) expect(newOtpCode()).toMatch(/^\d{6}$/);
  });
  it('binds a code hash to its member and secret', () => {
    const h = otpHash('secret-secret-secret', 7, '123456');
    expect(otpMatches('secret-secret-secret', 7, '123456', h)).toBe(true);
    expect(otpMatches('secret-secret-secret', 8, '123456', h)).toBe(false);
    expect(otpMatches('other-secret-secret', 7, '123456', h)).toBe(false);
    expect(otpMatches('secret-secret-secret', 7, '123457', h)).toBe(false);
  });
  it('compares API keys against their hash', () => {
    const key = newApiKey();
    expect(key).toMatch(/^sk_[A-Za-z0-9_-]{43}$/);
    expect(matchesHash(key, sha256(key))).toBe(true);
    expect(matchesHash(`${key}x`, sha256(key))).toBe(false);
  });
});
