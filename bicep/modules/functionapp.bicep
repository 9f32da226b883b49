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
@minValue(1)
@maxValue(1000)
@description('HTTP requests one instance serves at once (docs/deploy.md, "Per-instance concurrency"); the Python worker\'s thread pool is sized to match.')
param httpPerInstanceConcurrency int
@allowed([
  512
  2048
  4096
])
param instanceMemoryMB int
param workspaceId string
@description('Subnet for VNet integration (delegated to Microsoft.App/environments); empty: none.')
param subnetId string = ''
@description('Every app setting except the identity-based connections and the worker\'s thread pool, which this module owns.')
param memnetSettings object
@description('App Service Authentication with Entra ID in front of the app; true only when MEMNET_AUTH names appservice.')
param appServiceAuth bool = false
@description('Client id of the API\'s app registration (App Service Authentication\'s Entra provider).')
param entraClientId string = ''
@description('Token audiences App Service Authentication accepts (MEMNET_ENTRA_AUDIENCES).')
param entraAudiences array = []

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
        // Python's default on Flex is one request per instance: every concurrent request
        // would start another instance (a cold start, its own vault reads and quota
        // batches). The value is measured: docs/performance.md, "Per-instance concurrency".
        triggers: {
          http: {
            perInstanceConcurrency: httpPerInstanceConcurrency
          }
        }
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

// The worker runs the (synchronous) functions on a thread pool of this size: as many
// threads as the requests the platform sends one instance at once, so neither waits for
// the other (the worker's own default has changed between versions).
var workerSettings = {
  PYTHON_THREADPOOL_THREAD_COUNT: string(httpPerInstanceConcurrency)
}

resource appSettings 'Microsoft.Web/sites/config@2024-04-01' = {
  parent: site
  name: 'appsettings'
  properties: union(connectionSettings, workerSettings, memnetSettings)
}

// App Service Authentication ("Easy Auth"), when MEMNET_AUTH names appservice: the
// platform validates the Entra token and strips client-sent X-MS-CLIENT-PRINCIPAL*
// headers, which is what makes that header trustworthy. The app refuses the mode when
// the platform says authentication is off (WEBSITE_AUTH_ENABLED; docs/identity.md).
resource authSettings 'Microsoft.Web/sites/config@2024-04-01' = if (appServiceAuth) {
  parent: site
  name: 'authsettingsV2'
  properties: {
    platform: {
      enabled: true
    }
    globalValidation: {
      requireAuthentication: true
      unauthenticatedClientAction: 'Return401'
      // Event Grid delivers snapshot events to the blob extension's webhook with the
      // blobs_extension system key and no Entra token; the key authenticates it.
      excludedPaths: [
        '/runtime/webhooks/blobs'
      ]
    }
    identityProviders: {
      azureActiveDirectory: {
        enabled: true
        registration: {
          clientId: entraClientId
          // Tenant-specific v2 issuer, never /common: the app pins principals to this tenant.
          openIdIssuer: '${environment().authentication.loginEndpoint}${tenant().tenantId}/v2.0'
        }
        validation: {
          allowedAudiences: entraAudiences
        }
      }
    }
    login: {
      tokenStore: {
        enabled: false
      }
    }
    httpSettings: {
      requireHttps: true
    }
  }
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
