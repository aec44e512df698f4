import type { Formatter, Locale } from './format.ts';

/**
 * Every message identity sends, by kind: who it goes to, whether it is marketing (sent only with
 * the member's consent, with a one-click unsubscribe; see mail/marketing.ts), the variables its
 * templates may use (each a text already formatted for the locale, or a flag for `{{#if}}`), a
 * sample of each (the console's preview, the snapshot tests) and the default template per locale.
 *
 * A template is a subject line and a body of plain text (paragraphs separated by a blank line),
 * with `{{variable}}` and `{{#if flag}}…{{else}}…{{/if}}` (template.ts). The HTML part is the
 * tenant's branded layout around the body's paragraphs (layout.ts).
 */
export type MailKindName =
  | 'member_code'
  | 'staff_code'
  | 'points_earned'
  | 'points_expiring'
  | 'cashback_expiring'
  | 'tier_downgrade_warning'
  | 'claim_approved'
  | 'claim_rejected'
  | 'endpoint_disabled';

export interface TemplateText {
  subject: string;
  body: string;
}

export interface KindSpec {
  /** Who reads it: a member, a staff user, the tenant's contact. */
  to: 'member' | 'staff' | 'tenant';
  category: 'transactional' | 'marketing';
  /** What the message is, for the console's list. */
  description: string;
  /** Variable name → what it holds; its sample is in `sample`. */
  variables: Record<string, string>;
  /** Sample values, formatted for the locale (the console's preview, the snapshot tests). */
  sample: (f: Formatter, locale: Locale) => Record<string, string | boolean>;
  defaults: Record<Locale, TemplateText>;
}

const name = { name: "the member's name" };

export const catalog: Record<MailKindName, KindSpec> = {
  member_code: {
    to: 'member',
    category: 'transactional',
    description: 'A one-time code: sign-in, a reward claim or a points transfer',
    variables: {
      ...name,
      code: 'the code',
      purpose: 'what the code is for, in the locale',
      minutes: 'how long it is valid',
    },
    sample: (f, l) => ({
      name: 'Ana Silva',
      code: '482913',
      purpose: phrases[l].purpose['sign-in'],
      minutes: f.number(10),
    }),
    defaults: {
      en: {
        subject: 'Your {{purpose}} code',
        body: 'Hello {{name}},\n\nYour {{purpose}} code is {{code}}. It is valid for {{minutes}} minutes and can be used once.',
      },
      fr: {
        subject: 'Votre code {{purpose}}',
        body: 'Bonjour {{name}},\n\nVotre code {{purpose}} est {{code}}. Il est valable {{minutes}} minutes et ne peut servir qu’une fois.',
      },
      ar: {
        subject: 'رمز {{purpose}} الخاص بك',
        body: 'مرحبًا {{name}}،\n\nرمز {{purpose}} الخاص بك هو {{code}}. وهو صالح لمدة {{minutes}} دقيقة ويُستخدم مرة واحدة فقط.',
      },
    },
  },
  staff_code: {
    to: 'staff',
    category: 'transactional',
    description: "A staff user's sign-in code for the console",
    variables: { name: "the staff user's name", code: 'the code', minutes: 'how long it is valid' },
    sample: (f) => ({ name: 'Rui Costa', code: '739104', minutes: f.number(10) }),
    defaults: {
      en: {
        subject: 'Your staff console sign-in code',
        body: 'Hello {{name}},\n\nYour sign-in code for the staff console is {{code}}. It is valid for {{minutes}} minutes and can be used once.',
      },
      fr: {
        subject: 'Votre code de connexion à la console',
        body: 'Bonjour {{name}},\n\nVotre code de connexion à la console du personnel est {{code}}. Il est valable {{minutes}} minutes et ne peut servir qu’une fois.',
      },
      ar: {
        subject: 'رمز الدخول إلى لوحة الموظفين',
        body: 'مرحبًا {{name}}،\n\nرمز الدخول إلى لوحة الموظفين هو {{code}}. وهو صالح لمدة {{minutes}} دقيقة ويُستخدم مرة واحدة فقط.',
      },
    },
  },
  points_earned: {
    to: 'member',
    category: 'transactional',
    description: 'Points earned: one mail per member a minute, summing the purchases of that minute',
    variables: {
      ...name,
      points: 'the points earned',
      purchases: 'in how many purchases',
      several: 'flag: more than one purchase',
      pending: 'flag: some points can be spent only later',
      pending_points: 'how many of them can be spent only later',
      available_on: 'the day they can be spent',
      balance: 'the balance after the latest purchase (empty when not known)',
    },
    sample: (f) => ({
      name: 'Ana Silva',
      points: f.number(1250),
      purchases: f.number(3),
      several: true,
      pending: true,
      pending_points: f.number(250),
      available_on: f.date('2027-03-31'),
      balance: f.number(2400),
    }),
    defaults: {
      en: {
        subject: 'You earned {{points}} points',
        body:
          'Hello {{name}},\n\nYou earned {{points}} points{{#if several}} in {{purchases}} purchases{{/if}}.' +
          '{{#if pending}}{{#if several}} {{pending_points}} of them can be spent from {{available_on}}.{{else}} They can be spent from {{available_on}}.{{/if}}{{/if}}' +
          '{{#if balance}} Your balance is now {{balance}} points.{{/if}}',
      },
      fr: {
        subject: 'Vous avez gagné {{points}} points',
        body:
          'Bonjour {{name}},\n\nVous avez gagné {{points}} points{{#if several}} en {{purchases}} achats{{/if}}.' +
          '{{#if pending}}{{#if several}} {{pending_points}} d’entre eux seront utilisables à partir du {{available_on}}.{{else}} Ils seront utilisables à partir du {{available_on}}.{{/if}}{{/if}}' +
          '{{#if balance}} Votre solde est maintenant de {{balance}} points.{{/if}}',
      },
      ar: {
        subject: 'لقد ربحت {{points}} نقطة',
        body:
          'مرحبًا {{name}}،\n\nلقد ربحت {{points}} نقطة{{#if several}} في {{purchases}} عمليات شراء{{/if}}.' +
          '{{#if pending}}{{#if several}} يمكن استخدام {{pending_points}} منها ابتداءً من {{available_on}}.{{else}} يمكن استخدامها ابتداءً من {{available_on}}.{{/if}}{{/if}}' +
          '{{#if balance}} رصيدك الآن {{balance}} نقطة.{{/if}}',
      },
    },
  },
  points_expiring: {
    to: 'member',
    category: 'marketing',
    description: 'Points about to expire (sent the card’s warning days before)',
    variables: { ...name, points: 'the points that expire', expires_on: 'the day they expire' },
    sample: (f) => ({ name: 'Ana Silva', points: f.number(300), expires_on: f.date('2027-03-31') }),
    defaults: {
      en: {
        subject: '{{points}} points expire on {{expires_on}}',
        body: 'Hello {{name}},\n\n{{points}} of your points expire on {{expires_on}}. Spend them before then to keep their value.',
      },
      fr: {
        subject: '{{points}} points expirent le {{expires_on}}',
        body: 'Bonjour {{name}},\n\n{{points}} de vos points expirent le {{expires_on}}. Utilisez-les avant cette date pour en garder la valeur.',
      },
      ar: {
        subject: 'تنتهي صلاحية {{points}} نقطة في {{expires_on}}',
        body: 'مرحبًا {{name}}،\n\nتنتهي صلاحية {{points}} من نقاطك في {{expires_on}}. استخدمها قبل ذلك للحفاظ على قيمتها.',
      },
    },
  },
  cashback_expiring: {
    to: 'member',
    category: 'marketing',
    description: 'Cashback about to expire',
    variables: { ...name, amount: 'the amount that expires, with its currency', expires_on: 'the day it expires' },
    sample: (f) => ({ name: 'Ana Silva', amount: f.money(12.5, 'EUR'), expires_on: f.date('2027-03-31') }),
    defaults: {
      en: {
        subject: '{{amount}} of cashback expires on {{expires_on}}',
        body: 'Hello {{name}},\n\n{{amount}} of your cashback expires on {{expires_on}}. Spend it before then to keep it.',
      },
      fr: {
        subject: '{{amount}} de cashback expirent le {{expires_on}}',
        body: 'Bonjour {{name}},\n\n{{amount}} de votre cashback expirent le {{expires_on}}. Utilisez-les avant cette date pour les garder.',
      },
      ar: {
        subject: 'تنتهي صلاحية {{amount}} من الاسترداد النقدي في {{expires_on}}',
        body: 'مرحبًا {{name}}،\n\nتنتهي صلاحية {{amount}} من رصيد الاسترداد النقدي في {{expires_on}}. استخدمه قبل ذلك للاحتفاظ به.',
      },
    },
  },
  tier_downgrade_warning: {
    to: 'member',
    category: 'transactional',
    description: 'A tier review ahead that would move the member down',
    variables: {
      ...name,
      tier: 'the current tier',
      next_tier: 'the tier the member would move to',
      needed: 'what is still needed to keep the tier (points or purchases), in the locale',
      review_on: 'the day of the review',
    },
    sample: (f, l) => ({
      name: 'Ana Silva',
      tier: 'Gold',
      next_tier: 'Silver',
      needed: phrases[l].morePoints(f.number(120)),
      review_on: f.date('2027-06-30'),
    }),
    defaults: {
      en: {
        subject: 'Keep your {{tier}} tier: {{needed}} by {{review_on}}',
        body: 'Hello {{name}},\n\nYour {{tier}} tier is reviewed on {{review_on}}. Earn {{needed}} by then to keep it; otherwise you move to {{next_tier}}.',
      },
      fr: {
        subject: 'Gardez votre niveau {{tier}} : {{needed}} d’ici le {{review_on}}',
        body: 'Bonjour {{name}},\n\nVotre niveau {{tier}} est réexaminé le {{review_on}}. Obtenez {{needed}} d’ici là pour le garder ; sinon vous passerez au niveau {{next_tier}}.',
      },
      ar: {
        subject: 'حافظ على مستوى {{tier}}: {{needed}} قبل {{review_on}}',
        body: 'مرحبًا {{name}}،\n\nتتم مراجعة مستوى {{tier}} الخاص بك في {{review_on}}. اكسب {{needed}} قبل ذلك للحفاظ عليه؛ وإلا فستنتقل إلى {{next_tier}}.',
      },
    },
  },
  claim_approved: {
    to: 'member',
    category: 'transactional',
    description: 'A reward claim approved by staff',
    variables: {
      ...name,
      reward: "the reward's name",
      points: 'the points deducted',
      staff_note: "staff's note (may be empty)",
    },
    sample: (f) => ({ name: 'Ana Silva', reward: 'Free coffee', points: f.number(100), staff_note: 'Enjoy!' }),
    defaults: {
      en: {
        subject: 'Your reward claim was approved',
        body: 'Hello {{name}},\n\nYour claim for "{{reward}}" was approved; {{points}} points were deducted.{{#if staff_note}}\nNote from staff: {{staff_note}}{{/if}}',
      },
      fr: {
        subject: 'Votre demande de récompense a été acceptée',
        body: 'Bonjour {{name}},\n\nVotre demande pour « {{reward}} » a été acceptée ; {{points}} points ont été déduits.{{#if staff_note}}\nNote de l’équipe : {{staff_note}}{{/if}}',
      },
      ar: {
        subject: 'تمت الموافقة على طلب المكافأة',
        body: 'مرحبًا {{name}}،\n\nتمت الموافقة على طلبك «{{reward}}»؛ وخُصمت {{points}} نقطة.{{#if staff_note}}\nملاحظة من الفريق: {{staff_note}}{{/if}}',
      },
    },
  },
  claim_rejected: {
    to: 'member',
    category: 'transactional',
    description: 'A reward claim not approved by staff',
    variables: { ...name, reward: "the reward's name", staff_note: "staff's note (may be empty)" },
    sample: () => ({ name: 'Ana Silva', reward: 'Free coffee', staff_note: 'Out of stock this week.' }),
    defaults: {
      en: {
        subject: 'Your reward claim was not approved',
        body: 'Hello {{name}},\n\nYour claim for "{{reward}}" was not approved, and your points were kept.{{#if staff_note}}\nNote from staff: {{staff_note}}{{/if}}',
      },
      fr: {
        subject: 'Votre demande de récompense n’a pas été acceptée',
        body: 'Bonjour {{name}},\n\nVotre demande pour « {{reward}} » n’a pas été acceptée, et vos points ont été conservés.{{#if staff_note}}\nNote de l’équipe : {{staff_note}}{{/if}}',
      },
      ar: {
        subject: 'لم تتم الموافقة على طلب المكافأة',
        body: 'مرحبًا {{name}}،\n\nلم تتم الموافقة على طلبك «{{reward}}»، واحتُفظ بنقاطك.{{#if staff_note}}\nملاحظة من الفريق: {{staff_note}}{{/if}}',
      },
    },
  },
  endpoint_disabled: {
    to: 'tenant',
    category: 'transactional',
    description: "A webhook endpoint disabled after three days of failed deliveries (to the tenant's contact)",
    variables: {
      tenant_name: "the tenant's name",
      tenant_id: "the tenant's id",
      endpoint_id: "the endpoint's id",
      url: "the endpoint's URL",
      failing_since: 'when deliveries started failing',
      disabled_at: 'when it was disabled',
      last_error: 'the last delivery error',
    },
    sample: () => ({
      tenant_name: 'Demo Coffee',
      tenant_id: '1',
      endpoint_id: '7',
      url: 'https://crm.example.com/hooks',
      failing_since: '2027-03-01T09:00:00.000Z',
      disabled_at: '2027-03-04T09:00:00.000Z',
      last_error: 'HTTP 503',
    }),
    defaults: {
      en: {
        subject: 'Webhook endpoint {{endpoint_id}} was disabled',
        body:
          'Hello,\n\nThe webhook endpoint {{url}} of {{tenant_name}} (tenant {{tenant_id}}) failed every delivery since {{failing_since}}, so it was disabled at {{disabled_at}}. Its last error: {{last_error}}.\n\n' +
          'Fix the receiver, then enable the endpoint again (PATCH /api/v1/webhooks/endpoints/{{endpoint_id}} with {"enabled": true}); the deliveries it missed can be sent again from its delivery log (redeliver).',
      },
      fr: {
        subject: 'Le point de terminaison webhook {{endpoint_id}} a été désactivé',
        body:
          'Bonjour,\n\nLe point de terminaison webhook {{url}} de {{tenant_name}} (locataire {{tenant_id}}) a échoué à chaque livraison depuis {{failing_since}} ; il a donc été désactivé à {{disabled_at}}. Sa dernière erreur : {{last_error}}.\n\n' +
          'Corrigez le récepteur, puis réactivez le point de terminaison (PATCH /api/v1/webhooks/endpoints/{{endpoint_id}} avec {"enabled": true}) ; les livraisons manquées peuvent être renvoyées depuis son journal de livraison (redeliver).',
      },
      ar: {
        subject: 'تم تعطيل نقطة نهاية الويب هوك {{endpoint_id}}',
        body:
          'مرحبًا،\n\nفشلت كل عمليات التسليم إلى نقطة نهاية الويب هوك {{url}} الخاصة بـ {{tenant_name}} (المستأجر {{tenant_id}}) منذ {{failing_since}}، لذلك تم تعطيلها في {{disabled_at}}. آخر خطأ: {{last_error}}.\n\n' +
          'أصلح المستقبِل، ثم فعّل نقطة النهاية من جديد (PATCH /api/v1/webhooks/endpoints/{{endpoint_id}} مع {"enabled": true})؛ ويمكن إعادة إرسال ما فات من سجل التسليم (redeliver).',
      },
    },
  },
};

export const MAIL_KINDS: readonly MailKindName[] = [
  'member_code',
  'staff_code',
  'points_earned',
  'points_expiring',
  'cashback_expiring',
  'tier_downgrade_warning',
  'claim_approved',
  'claim_rejected',
  'endpoint_disabled',
];

export function isMailKind(v: unknown): v is MailKindName {
  return MAIL_KINDS.some((k) => k === v);
}

/** The phrases a template's variables are made of, per locale (code purposes, what a tier needs). */
export const phrases: Record<
  Locale,
  {
    purpose: Record<'sign-in' | 'claim verification' | 'transfer verification', string>;
    morePoints: (n: string) => string;
    moreSpent: (amount: string) => string;
    unsubscribe: string;
    /** The text part's unsubscribe line. */
    unsubscribeLine: (url: string) => string;
    why: string;
    yourReward: string;
  }
> = {
  en: {
    purpose: {
      'sign-in': 'sign-in',
      'claim verification': 'claim verification',
      'transfer verification': 'transfer verification',
    },
    morePoints: (n) => `${n} more points`,
    moreSpent: (a) => `${a} more in purchases`,
    unsubscribe: 'Unsubscribe',
    unsubscribeLine: (url) => `You get this mail because you agreed to hear from us. Unsubscribe: ${url}`,
    why: 'You get this mail because you agreed to hear from us.',
    yourReward: 'your reward',
  },
  fr: {
    purpose: {
      'sign-in': 'de connexion',
      'claim verification': 'de confirmation de récompense',
      'transfer verification': 'de confirmation de transfert',
    },
    morePoints: (n) => `${n} points de plus`,
    moreSpent: (a) => `${a} d’achats de plus`,
    unsubscribe: 'Se désabonner',
    unsubscribeLine: (url) =>
      `Vous recevez ce message parce que vous avez accepté d’avoir de nos nouvelles. Se désabonner : ${url}`,
    why: 'Vous recevez ce message parce que vous avez accepté d’avoir de nos nouvelles.',
    yourReward: 'votre récompense',
  },
  ar: {
    purpose: {
      'sign-in': 'تسجيل الدخول',
      'claim verification': 'تأكيد طلب المكافأة',
      'transfer verification': 'تأكيد تحويل النقاط',
    },
    morePoints: (n) => `${n} نقطة إضافية`,
    moreSpent: (a) => `مشتريات إضافية بقيمة ${a}`,
    unsubscribe: 'إلغاء الاشتراك',
    unsubscribeLine: (url) => `تصلك هذه الرسالة لأنك وافقت على تلقي أخبارنا. إلغاء الاشتراك: ${url}`,
    why: 'تصلك هذه الرسالة لأنك وافقت على تلقي أخبارنا.',
    yourReward: 'مكافأتك',
  },
};
