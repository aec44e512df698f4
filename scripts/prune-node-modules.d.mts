export interface ListedDependency {
  version: string;
  dependencies?: Record<string, ListedDependency>;
  optionalDependencies?: Record<string, ListedDependency>;
}
export declare function productionPackages(
  list: { dependencies?: Record<string, ListedDependency>; optionalDependencies?: Record<string, ListedDependency> }[],
): Set<string>;
export declare function prune(modulesDir: string, keep: Set<string>): string[];
