// Private networking (enablePrivateNetworking): a VNet with a subnet for the function
// app's outbound VNet integration (Flex Consumption delegates it to
// Microsoft.App/environments) and a subnet for the private endpoints of storage, search
// and Key Vault.
param name string
param location string
param tags object
param addressPrefix string = '10.40.0.0/16'
param appSubnetPrefix string = '10.40.1.0/24'
param endpointSubnetPrefix string = '10.40.2.0/24'

resource vnet 'Microsoft.Network/virtualNetworks@2024-01-01' = {
  name: name
  location: location
  tags: tags
  properties: {
    addressSpace: {
      addressPrefixes: [
        addressPrefix
      ]
    }
    subnets: [
      {
        name: 'app'
        properties: {
          addressPrefix: appSubnetPrefix
          delegations: [
            {
              name: 'flex-consumption'
              properties: {
                serviceName: 'Microsoft.App/environments'
              }
            }
          ]
        }
      }
      {
        name: 'endpoints'
        properties: {
          addressPrefix: endpointSubnetPrefix
          privateEndpointNetworkPolicies: 'Disabled'
        }
      }
    ]
  }
}

output id string = vnet.id
output appSubnetId string = vnet.properties.subnets[0].id
output endpointSubnetId string = vnet.properties.subnets[1].id
