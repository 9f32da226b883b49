// The operator's dashboard: an Azure Monitor workbook over the workspace's AppMetrics
// (the spec 19.1 metrics, by the instrument names the app emits) and the function app's
// requests. docs/deploy.md describes each panel.
param location string
param tags object
param workspaceId string
@description('Makes the workbook id (a GUID) stable per environment.')
param seed string

var panels = [
  {
    title: 'Request latency by endpoint (ms, p50 / p95 of export-interval means)'
    query: 'AppMetrics | where Name == "memnet.request.duration" | extend endpoint = tostring(Properties["endpoint"]) | summarize p50 = percentile(Sum / ItemCount, 50), p95 = percentile(Sum / ItemCount, 95) by endpoint, bin(TimeGenerated, 5m) | render timechart'
  }
  {
    title: 'Patch outcomes'
    query: 'AppMetrics | where Name == "memnet.patch.outcomes" | extend outcome = tostring(Properties["outcome"]) | summarize patches = sum(Sum) by outcome, bin(TimeGenerated, 5m) | render columnchart'
  }
  {
    title: '412 share by binding'
    query: 'AppMetrics | where Name == "memnet.patch.outcomes" | extend binding_id = tostring(Properties["binding_id"]), outcome = tostring(Properties["outcome"]) | summarize share = sumif(Sum, outcome == "etag_mismatch") / sum(Sum) by binding_id, bin(TimeGenerated, 15m) | render timechart'
  }
  {
    title: 'Document size utilisation by binding (max)'
    query: 'AppMetrics | where Name == "memnet.document.size_utilisation" | extend binding_id = tostring(Properties["binding_id"]) | summarize utilisation = max(Max) by binding_id, bin(TimeGenerated, 1h) | render timechart'
  }
  {
    title: 'Replay applies by status'
    query: 'AppMetrics | where Name == "memnet.replay.applies" | extend status = tostring(Properties["status"]) | summarize applies = sum(Sum) by status, bin(TimeGenerated, 5m) | render columnchart'
  }
  {
    title: 'Replay backlog age (s, max)'
    query: 'AppMetrics | where Name == "memnet.replay.backlog_age" | summarize backlog_age = max(Max) by bin(TimeGenerated, 5m) | render timechart'
  }
  {
    title: 'Search latency (ms) and zero-result share of ranked searches'
    query: 'AppMetrics | where Name in ("memnet.search.duration", "memnet.search.results") | extend ranked = tostring(Properties["ranked"]) | summarize mean_ms = sumif(Sum, Name == "memnet.search.duration") / sumif(ItemCount, Name == "memnet.search.duration"), zero_share = 1.0 * sumif(ItemCount, Name == "memnet.search.results" and Max == 0) / sumif(ItemCount, Name == "memnet.search.results") by ranked, bin(TimeGenerated, 15m) | render timechart'
  }
  {
    title: 'Index lag (s, max)'
    query: 'AppMetrics | where Name == "memnet.index.lag" | summarize lag = max(Max) by bin(TimeGenerated, 5m) | render timechart'
  }
]

var content = {
  version: 'Notebook/1.0'
  items: [
    for (panel, i) in panels: {
      type: 3
      name: 'panel-${i}'
      content: {
        version: 'KqlItem/1.0'
        title: panel.title
        query: panel.query
        queryType: 0
        resourceType: 'microsoft.operationalinsights/workspaces'
        timeContext: {
          durationMs: 86400000
        }
      }
    }
  ]
  isLocked: false
}

resource workbook 'Microsoft.Insights/workbooks@2023-06-01' = {
  name: guid(resourceGroup().id, seed, 'memnet-dashboard')
  location: location
  tags: tags
  kind: 'shared'
  properties: {
    displayName: 'mem.net operations'
    category: 'workbook'
    sourceId: workspaceId
    serializedData: string(content)
  }
}

output id string = workbook.id
