/** The earning rules engine: pure, no I/O (see evaluate.ts for the combination order). */
export { checkedRule, compileRule, ruleProblems, type RuleProblem } from './definition.ts';
export { evaluateRules, spread } from './evaluate.ts';
export { isTimeZone, localTime, periodKey, PERIODS, WEEKDAYS, type Period, type Weekday } from './local-time.ts';
export { refundByLines, type LineRefund, type RefundedBefore, type RefundLine } from './refund.ts';
export * from './types.ts';
