/** What an endpoint asked for: `*` (every type) or the named types. */
export function wantsType(eventTypes: readonly string[], type: string): boolean {
  return eventTypes.includes('*') || eventTypes.includes(type);
}

/**
 * An endpoint receives the events that happened from its creation on: a consumer catching up on a
 * backlog does not send a new endpoint what happened before it existed.
 */
export function receives(
  endpoint: { event_types: readonly string[]; created_at: Date },
  type: string,
  occurredAt: Date,
): boolean {
  return wantsType(endpoint.event_types, type) && occurredAt.getTime() >= endpoint.created_at.getTime();
}
