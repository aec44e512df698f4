// composeverter ships no type declarations; this is the one function the tests use.
declare module 'composeverter' {
  const composeverter: {
    /** The Compose Specification JSON schema (its format checks turned into patterns). */
    getDockerComposeSchemaWithoutFormats(): Record<string, unknown>;
  };
  export default composeverter;
}
