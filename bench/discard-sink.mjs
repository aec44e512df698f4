// The benchmark's mail server, in a process of its own (not in the load generator's): accepts
// every message over SMTP and drops it. Prints its port on stdout; stops on SIGTERM.
import { SMTPServer } from 'smtp-server';

const server = new SMTPServer({
  authOptional: true,
  disabledCommands: ['STARTTLS'],
  // smtp-server resolves every client's address by reverse DNS before its greeting; a real mail
  // server's resolver answers at once, this machine's would time out.
  disableReverseLookup: true,
  logger: false,
  onData(stream, _session, callback) {
    stream.on('data', () => undefined);
    stream.on('end', () => callback());
  },
});
server.on('error', () => undefined); // a client hanging up mid-message changes nothing here
server.listen(0, '127.0.0.1', () => console.log(server.server.address().port));
process.once('SIGTERM', () => server.close(() => process.exit(0)));
