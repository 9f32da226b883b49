// The Flex Consumption function app (Linux, Python 3.11) and its plan.
//
// Runtime pinning on Flex Consumption: FUNCTIONS_EXTENSION_VERSION and
// FUNCTIONS_WORKER_RUNTIME are not app settings there (the platform rejects them); the
// language and version are functionAppConfig.runtime below, the host is always Functions
// 4.x, and the binding extensions are pinned by host.json's extensionBundle version range.
param name string
param planName string
param location string
param tags object
param identityId string
param identityClientId string
param storageAccountName string
param blobEndpoint string
param queueEndpoint string
param deploymentContainerName string
param maximumInstanceCount int
@allowed([
  512
  2048
  4096
])
param instanceMemoryMB int
param workspaceId string
@description('Subnet for VNet integration (delegated to Microsoft.App/environments); empty: none.')
param subnetId string = ''
@description('Every app setting except the identity-based connections, which this module owns.')
param memnetSettings object

resource plan 'Microsoft.Web/serverfarms@2024-04-01' = {
  name: planName
  location: location
  tags: tags
  kind: 'functionapp'
  sku: {
    tier: 'FlexConsumption'
    name: 'FC1'
  }
  properties: {
    reserved: true
  }
}

resource site 'Microsoft.Web/sites@2024-04-01' = {
  name: name
  location: location
  // azd deploys the service "api" of azure.yaml to the resource carrying this tag.
  tags: union(tags, {
    'azd-service-name': 'api'
  })
  kind: 'functionapp,linux'
  identity: {
    type: 'UserAssigned'
    userAssignedIdentities: {
      '${identityId}': {}
    }
  }
  properties: {
    serverFarmId: plan.id
    httpsOnly: true
    virtualNetworkSubnetId: empty(subnetId) ? null : subnetId
    siteConfig: {
      minTlsVersion: '1.2'
      ftpsState: 'Disabled'
      http20Enabled: true
    }
    functionAppConfig: {
      deployment: {
        storage: {
          type: 'blobContainer'
          value: '${blobEndpoint}${deploymentContainerName}'
          authentication: {
            type: 'UserAssignedIdentity'
            userAssignedIdentityResourceId: identityId
          }
        }
      }
      scaleAndConcurrency: {
        maximumInstanceCount: maximumInstanceCount
        instanceMemoryMB: instanceMemoryMB
      }
      runtime: {
        name: 'python'
        version: '3.11'
      }
    }
  }
}

// Identity-based connections (no keys): the host's storage, and the two trigger
// connections function_app.py declares (connection="MEMNET_QUEUE", connection="MEMNET_BLOB").
var connectionSettings = {
  AzureWebJobsStorage__accountName: storageAccountName
  AzureWebJobsStorage__credential: 'managedidentity'
  AzureWebJobsStorage__clientId: identityClientId
  MEMNET_QUEUE__queueServiceUri: queueEndpoint
  MEMNET_QUEUE__credential: 'managedidentity'
  MEMNET_QUEUE__clientId: identityClientId
  MEMNET_BLOB__blobServiceUri: blobEndpoint
  MEMNET_BLOB__queueServiceUri: queueEndpoint
  MEMNET_BLOB__credential: 'managedidentity'
  MEMNET_BLOB__clientId: identityClientId
  // DefaultAzureCredential (blob, queue, search, Key Vault clients in memnet/adapters/azure)
  // picks the user-assigned identity by this.
  AZURE_CLIENT_ID: identityClientId
}

resource appSettings 'Microsoft.Web/sites/config@2024-04-01' = {
  parent: site
  name: 'appsettings'
  properties: union(connectionSettings, memnetSettings)
}

resource diagnostics 'Microsoft.Insights/diagnosticSettings@2021-05-01-preview' = {
  name: 'to-log-analytics'
  scope: site
  properties: {
    workspaceId: workspaceId
    logs: [
      {
        category: 'FunctionAppLogs'
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

output id string = site.id
output name string = site.name
output defaultHostName string = site.properties.defaultHostName
