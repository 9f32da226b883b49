// The one storage account: the app's documents and snapshots (blob container), its work
// queues (each with the poison queue the Functions host moves a message to after its last
// failed delivery), the Flex Consumption deployment package container, and the Functions
// host's own storage (AzureWebJobsStorage). Shared-key access is off: everything,
// including the host, authenticates with Entra ID (the app's managed identity).
param name string
param location string
param tags object
param containerName string
param deploymentContainerName string
param workspaceId string
param enablePrivateNetworking bool
@description('Days a deleted blob stays recoverable; 0: soft delete off.')
param softDeleteDays int

// Queue names from memnet/services (INDEX_QUEUE, REPLAY_QUEUE, COMPACT_QUEUE,
// FORGET_QUEUE) and the -poison queue of each. The host creates a poison queue on demand
// only when it may manage queues; creating all of them here means the app never needs it.
var queueNames = [
  'memnet-index'
  'memnet-index-poison'
  'memnet-replay'
  'memnet-replay-poison'
  'memnet-compact'
  'memnet-compact-poison'
  'memnet-forget'
  'memnet-forget-poison'
  'memnet-export'
  'memnet-export-poison'
]

resource account 'Microsoft.Storage/storageAccounts@2023-05-01' = {
  name: name
  location: location
  tags: tags
  kind: 'StorageV2'
  sku: {
    name: 'Standard_LRS'
  }
  properties: {
    accessTier: 'Hot'
    allowSharedKeyAccess: false
    allowBlobPublicAccess: false
    allowCrossTenantReplication: false
    defaultToOAuthAuthentication: true
    minimumTlsVersion: 'TLS1_2'
    supportsHttpsTrafficOnly: true
    publicNetworkAccess: enablePrivateNetworking ? 'Disabled' : 'Enabled'
    networkAcls: {
      bypass: 'AzureServices'
      defaultAction: enablePrivateNetworking ? 'Deny' : 'Allow'
    }
  }
}

resource blobService 'Microsoft.Storage/storageAccounts/blobServices@2023-05-01' = {
  parent: account
  name: 'default'
  properties: {
    deleteRetentionPolicy: softDeleteDays > 0 ? {
      enabled: true
      days: softDeleteDays
    } : {
      enabled: false
    }
  }
}

resource dataContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' = {
  parent: blobService
  name: containerName
  properties: {
    publicAccess: 'None'
  }
}

resource deploymentContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2023-05-01' = {
  parent: blobService
  name: deploymentContainerName
  properties: {
    publicAccess: 'None'
  }
}

resource queueService 'Microsoft.Storage/storageAccounts/queueServices@2023-05-01' = {
  parent: account
  name: 'default'
}

resource queues 'Microsoft.Storage/storageAccounts/queueServices/queues@2023-05-01' = [
  for queueName in queueNames: {
    parent: queueService
    name: queueName
  }
]

resource blobDiagnostics 'Microsoft.Insights/diagnosticSettings@2021-05-01-preview' = {
  name: 'to-log-analytics'
  scope: blobService
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
        category: 'Transaction'
        enabled: true
      }
    ]
  }
}

resource queueDiagnostics 'Microsoft.Insights/diagnosticSettings@2021-05-01-preview' = {
  name: 'to-log-analytics'
  scope: queueService
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
        category: 'Transaction'
        enabled: true
      }
    ]
  }
}

output id string = account.id
output name string = account.name
output blobEndpoint string = account.properties.primaryEndpoints.blob
output queueEndpoint string = account.properties.primaryEndpoints.queue
output containerName string = dataContainer.name
output deploymentContainerName string = deploymentContainer.name
