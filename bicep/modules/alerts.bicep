// Spec 19.4 alerts as log search alerts over the workspace's AppMetrics table, where
// Application Insights (workspace-based) lands the app's OpenTelemetry metrics: Name is the
// instrument name (meter "memnet"), Sum/ItemCount/Max the aggregates of one export
// interval, Properties the attributes. Names and thresholds: docs/deploy.md, the
// design note for issue 13.
//
// Every rule sets skipQueryValidation: the workspace is created by the same deployment
// and holds no AppMetrics row until the app has exported one, and the rule's creation
// validates its query against the workspace, which can fail the whole provision. The
// queries are checked here instead (tests/deploy/test_resources.py: every metric name is
// one the code emits), and a rule whose query stops working shows its failure on the
// rule in the portal. Why not metric alerts or a later step: docs/deploy.md ("What was
// changed before the first deployment").
param location string
param tags object
param workspaceId string
param namePrefix string
@description('Email for the action group; empty: the alerts fire with no notification.')
param alertEmail string = ''
@description('Share of patches per binding answered 412 (0..1), as a string: Bicep has no float type.')
param etagConflictRateThreshold string = '0.2'
param etagConflictMinPatches int = 50
param validationFailureThreshold int = 50
param replayBacklogAgeSeconds int = 300
param indexLagSeconds int = 120

resource actionGroup 'Microsoft.Insights/actionGroups@2023-01-01' = if (!empty(alertEmail)) {
  name: '${namePrefix}-ops'
  location: 'global'
  tags: tags
  properties: {
    groupShortName: 'memnet-ops'
    enabled: true
    emailReceivers: [
      {
        name: 'operator'
        emailAddress: alertEmail
        useCommonAlertSchema: true
      }
    ]
  }
}

var actions = empty(alertEmail) ? [] : [actionGroup.id]

var etagConflictQuery = '''
AppMetrics
| where Name == "memnet.patch.outcomes"
| extend binding_id = tostring(Properties["binding_id"]), outcome = tostring(Properties["outcome"])
| summarize patches = sum(Sum), conflicts = sumif(Sum, outcome == "etag_mismatch") by binding_id
'''

var validationFailureQuery = '''
AppMetrics
| where Name == "memnet.patch.outcomes"
| where tostring(Properties["outcome"]) == "validation_failed"
| summarize failures = sum(Sum)
'''

var replayBacklogQuery = '''
AppMetrics
| where Name == "memnet.replay.backlog_age"
| summarize backlog_age = max(Max)
'''

var indexLagQuery = '''
AppMetrics
| where Name == "memnet.index.lag"
| summarize index_lag = max(Max)
'''

resource etagConflictRate 'Microsoft.Insights/scheduledQueryRules@2023-03-15-preview' = {
  name: '${namePrefix}-etag-conflict-rate'
  location: location
  tags: tags
  properties: {
    displayName: 'mem.net: sustained 412 rate per binding'
    description: 'Share of patches answered 412 (etag_mismatch) per binding over 15 minutes.'
    severity: 2
    enabled: true
    scopes: [
      workspaceId
    ]
    skipQueryValidation: true
    evaluationFrequency: 'PT5M'
    windowSize: 'PT15M'
    criteria: {
      allOf: [
        {
          query: '${etagConflictQuery}| where patches >= ${etagConflictMinPatches}\n| extend conflict_rate = conflicts / patches\n'
          timeAggregation: 'Maximum'
          metricMeasureColumn: 'conflict_rate'
          dimensions: [
            {
              name: 'binding_id'
              operator: 'Include'
              values: [
                '*'
              ]
            }
          ]
          operator: 'GreaterThan'
          threshold: json(etagConflictRateThreshold)
          failingPeriods: {
            numberOfEvaluationPeriods: 1
            minFailingPeriodsToAlert: 1
          }
        }
      ]
    }
    autoMitigate: true
    actions: {
      actionGroups: actions
    }
  }
}

resource validationFailures 'Microsoft.Insights/scheduledQueryRules@2023-03-15-preview' = {
  name: '${namePrefix}-validation-failures'
  location: location
  tags: tags
  properties: {
    displayName: 'mem.net: validation failure spike'
    description: 'Patches rejected by validation (422) in 5 minutes.'
    severity: 3
    enabled: true
    scopes: [
      workspaceId
    ]
    skipQueryValidation: true
    evaluationFrequency: 'PT5M'
    windowSize: 'PT5M'
    criteria: {
      allOf: [
        {
          query: validationFailureQuery
          timeAggregation: 'Total'
          metricMeasureColumn: 'failures'
          operator: 'GreaterThan'
          threshold: validationFailureThreshold
          failingPeriods: {
            numberOfEvaluationPeriods: 1
            minFailingPeriodsToAlert: 1
          }
        }
      ]
    }
    autoMitigate: true
    actions: {
      actionGroups: actions
    }
  }
}

resource replayBacklogAge 'Microsoft.Insights/scheduledQueryRules@2023-03-15-preview' = {
  name: '${namePrefix}-replay-backlog-age'
  location: location
  tags: tags
  properties: {
    displayName: 'mem.net: replay backlog age'
    description: 'Oldest snapshot a replay worker took in 10 minutes, in seconds since upload.'
    severity: 2
    enabled: true
    scopes: [
      workspaceId
    ]
    skipQueryValidation: true
    evaluationFrequency: 'PT5M'
    windowSize: 'PT10M'
    criteria: {
      allOf: [
        {
          query: replayBacklogQuery
          timeAggregation: 'Maximum'
          metricMeasureColumn: 'backlog_age'
          operator: 'GreaterThan'
          threshold: replayBacklogAgeSeconds
          failingPeriods: {
            numberOfEvaluationPeriods: 1
            minFailingPeriodsToAlert: 1
          }
        }
      ]
    }
    autoMitigate: true
    actions: {
      actionGroups: actions
    }
  }
}

resource indexLag 'Microsoft.Insights/scheduledQueryRules@2023-03-15-preview' = {
  name: '${namePrefix}-index-lag'
  location: location
  tags: tags
  properties: {
    displayName: 'mem.net: indexing lag'
    description: 'Largest delay from event recorded to event indexed in 10 minutes, in seconds.'
    severity: 3
    enabled: true
    scopes: [
      workspaceId
    ]
    skipQueryValidation: true
    evaluationFrequency: 'PT5M'
    windowSize: 'PT10M'
    criteria: {
      allOf: [
        {
          query: indexLagQuery
          timeAggregation: 'Maximum'
          metricMeasureColumn: 'index_lag'
          operator: 'GreaterThan'
          threshold: indexLagSeconds
          failingPeriods: {
            numberOfEvaluationPeriods: 1
            minFailingPeriodsToAlert: 1
          }
        }
      ]
    }
    autoMitigate: true
    actions: {
      actionGroups: actions
    }
  }
}
