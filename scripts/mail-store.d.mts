export declare function mailStore(varDir: string): {
  dir: string;
  logFile: string;
  save(mail: { to: string; subject: string; text: string }): string;
};
