// Azure AI Search for the event index. Local (api-key) auth is disabled: the app queries
// and writes with its managed identity (Search Index Data Contributor) and the index is
// created by the deploying principal (Search Service Contributor) in the post-provision
// step, so no admin key is ever handed out.
param name string
param location string
param tags object
@allowed([
  'basic'
  'standard'
  'standard2'
  'standard3'
])
param sku string
param workspaceId string
param enablePrivateNetworking bool

resource search 'Microsoft.Search/searchServices@2023-11-01' = {
  name: name
  location: location
  tags: tags
  sku: {
    name: sku
  }
  properties: {
    replicaCount: 1
    partitionCount: 1
    hostingMode: 'default'
    disableLocalAuth: true
    publicNetworkAccess: enablePrivateNetworking ? 'disabled' : 'enabled'
  }
}

resource diagnostics 'Microsoft.Insights/diagnosticSettings@2021-05-01-preview' = {
  name: 'to-log-analytics'
  scope: search
  properties: {
    workspaceId: workspaceId
    logs: [
      {
        categoryGroup: 'allLogs'
        enabled: true
      }
    ]
    metrics: [
      {
        category: 'AllMetrics'
        enabled: true
      }
    ]
  }
}

output id string = search.id
output name string = search.name
output endpoint string = 'https://${search.name}.search.windows.net'
