// The envelope encryption is shared with identity's SMTP passwords: it lives in @loyalty/runtime.
export {
  isSealed,
  masterKey,
  newDataKey,
  openSecret as open,
  parseMasterKey,
  sealSecret as seal,
  unwrapDataKey,
  wrapDataKey,
  wrappedKeyId,
  type MasterKey,
} from '@loyalty/runtime';
