// The build's last step (scripts/build.mjs bundles and runs this): the OpenAPI documents to dist/openapi.
import { writeDocuments } from './openapi-documents.ts';

writeDocuments();
